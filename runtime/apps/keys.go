package apps

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// SigningDigest is a signer's identity: the SHA-256 of its ed25519 public
// key, 64 lowercase hex characters.
func SigningDigest(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:])
}

// GenerateKey returns a new signing key.
func GenerateKey() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return priv, nil
}

// MarshalKey encodes a signing key as PEM "PRIVATE KEY" (PKCS #8), the
// form openssl reads.
func MarshalKey(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseKey decodes a key written by MarshalKey.
func ParseKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("parse key: not a PEM PRIVATE KEY")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse key: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("parse key: %T is not an ed25519 key", k)
	}
	return priv, nil
}

// ErrKeyExposed means a key file can be read by other users.
var ErrKeyExposed = errors.New("key file is readable by group or others (chmod 600 it)")

// WriteKeyFile creates path with a new key's PEM, mode 0600. An existing
// file is never overwritten.
func WriteKeyFile(path string, priv ed25519.PrivateKey) error {
	b, err := MarshalKey(priv)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	// The umask could have narrowed the mode but never widened it; make
	// it exact anyway.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("write key: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write key: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	return nil
}

// ReadKeyFile reads a key file, refusing one that group or others can
// read (ErrKeyExposed).
func ReadKeyFile(path string) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read key %s: not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("read key %s: %w", path, ErrKeyExposed)
	}
	if fi.Size() > 16<<10 {
		return nil, fmt.Errorf("read key %s: too large for a key", path)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	return ParseKey(b)
}
