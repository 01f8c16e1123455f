package model

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// MaxKeyLen bounds a model key read from a file or a reader. Real keys are
// a few hundred bytes; anything longer is a wrong file, not a key.
const MaxKeyLen = 16 << 10

// ErrNoKey reports that a key source held no key (unset variable, empty
// file or empty input). Match it with errors.Is.
var ErrNoKey = errors.New("no model key")

// KeySource names where a model key comes from. Exactly one field must be
// set. Keys never travel on command lines: a flag names the source, never
// the key itself.
type KeySource struct {
	// Env is the name of an environment variable holding the key. A
	// process that starts children should unset it once read, because
	// children inherit the environment.
	Env string
	// File is the path of a file holding the key. It must be a regular
	// file that neither group nor others may read or write (mode 0600 or
	// 0400).
	File string
	// Reader supplies the key, typically os.Stdin. It is read to the end
	// (at most MaxKeyLen bytes).
	Reader io.Reader
}

// LoadKey reads a key from src. Surrounding whitespace (including a
// trailing newline) is trimmed. Errors name the source (variable or path),
// never the key.
func LoadKey(src KeySource) (string, error) {
	n := 0
	if src.Env != "" {
		n++
	}
	if src.File != "" {
		n++
	}
	if src.Reader != nil {
		n++
	}
	if n != 1 {
		return "", errors.New("load model key: exactly one of Env, File or Reader must be set")
	}
	switch {
	case src.Env != "":
		return KeyFromEnv(src.Env)
	case src.File != "":
		return KeyFromFile(src.File)
	default:
		return KeyFromReader(src.Reader)
	}
}

// KeyFromEnv returns the trimmed value of the environment variable name.
func KeyFromEnv(name string) (string, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("load model key: environment variable %s is not set: %w", name, ErrNoKey)
	}
	k := strings.TrimSpace(v)
	if k == "" {
		return "", fmt.Errorf("load model key: environment variable %s is empty: %w", name, ErrNoKey)
	}
	return k, nil
}

// KeyFromFile returns the trimmed content of the file at path. It refuses
// files that group or others may access, so a key is never left readable
// by app uids on the device.
func KeyFromFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("load model key: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("load model key: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("load model key: %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("load model key: %s has mode %#o, which lets group or others access it; run chmod 600 on it: %w",
			path, perm, fs.ErrPermission)
	}
	k, err := readKey(f)
	if err != nil {
		return "", fmt.Errorf("load model key: %s: %w", path, err)
	}
	return k, nil
}

// KeyFromReader reads r to the end and returns the trimmed content.
func KeyFromReader(r io.Reader) (string, error) {
	k, err := readKey(r)
	if err != nil {
		return "", fmt.Errorf("load model key: %w", err)
	}
	return k, nil
}

func readKey(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxKeyLen+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxKeyLen {
		return "", fmt.Errorf("key is longer than %d bytes", MaxKeyLen)
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", ErrNoKey
	}
	if strings.ContainsAny(k, "\r\n") {
		return "", errors.New("key spans several lines")
	}
	return k, nil
}

// GoString keeps the key out of %#v output; String covers %v and %+v.
func (c Config) GoString() string {
	keySet := "false"
	if c.Key != "" {
		keySet = "true"
	}
	return fmt.Sprintf("model.Config{Provider:%q, BaseURL:%q, Model:%q, Script:%q, KeySet:%s, Timeout:%v}",
		c.Provider, c.BaseURL, c.Model, c.Script, keySet, c.Timeout)
}
