// Package tzdata reads Android's time-zone database: the one packed file
// bionic reads (/apex/com.android.tzdata/etc/tz/tzdata since Android 10,
// /system/usr/share/zoneinfo/tzdata before), which the tzdata APEX
// updates without a system update. Android has no /usr/share/zoneinfo, so
// a GOOS=linux binary's time package finds no zone there.
//
// The format (bionic's bionic_tzdata_header_t and index_entry_t, all
// integers big-endian):
//
//	header  char version[12] ("tzdata2025b\0"), int32 index_offset,
//	        int32 data_offset, int32 final_offset (the zone.tab that follows)
//	index   from index_offset to data_offset, 52 bytes per zone:
//	        char name[40] (NUL-padded), int32 start (from data_offset),
//	        int32 length, int32 unused
//	data    each zone's TZif file, as time.LoadLocationFromTZData reads it
package tzdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Paths are where Android keeps the database, newest first.
var Paths = []string{
	"/apex/com.android.tzdata/etc/tz/tzdata",
	"/system/usr/share/zoneinfo/tzdata",
}

const (
	headerSize = 24
	entrySize  = 52
	nameLen    = 40
	// maxFile bounds what Open reads (the real file is about 500 KiB).
	maxFile = 16 << 20
)

// ErrFormat: the file is not a bionic tzdata file.
var ErrFormat = errors.New("tzdata: not a bionic tzdata file")

// ErrNoZone: the database has no zone by that name.
var ErrNoZone = errors.New("tzdata: no such zone")

// DB is one tzdata file, read whole.
type DB struct {
	version string
	data    []byte
	zones   map[string][2]int // name → start, end in data
}

// Open reads and checks the file at path.
func Open(path string) (*DB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFile+1)); err != nil {
		return nil, fmt.Errorf("tzdata %s: %w", path, err)
	}
	if buf.Len() > maxFile {
		return nil, fmt.Errorf("tzdata %s: larger than %d bytes: %w", path, maxFile, ErrFormat)
	}
	db, err := Parse(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("tzdata %s: %w", path, err)
	}
	return db, nil
}

// Parse reads a database from its bytes (kept, not copied).
func Parse(b []byte) (*DB, error) {
	if len(b) < headerSize || !bytes.HasPrefix(b, []byte("tzdata")) || b[11] != 0 {
		return nil, ErrFormat
	}
	version := string(bytes.TrimRight(b[6:12], "\x00"))
	index := int(int32(binary.BigEndian.Uint32(b[12:16])))
	data := int(int32(binary.BigEndian.Uint32(b[16:20])))
	final := int(int32(binary.BigEndian.Uint32(b[20:24])))
	if index < headerSize || data < index || final < data || final > len(b) || (data-index)%entrySize != 0 {
		return nil, fmt.Errorf("%w: offsets %d, %d, %d in %d bytes", ErrFormat, index, data, final, len(b))
	}
	db := &DB{version: version, data: b, zones: map[string][2]int{}}
	for off := index; off < data; off += entrySize {
		e := b[off : off+entrySize]
		name := string(bytes.TrimRight(e[:nameLen], "\x00"))
		start := int(int32(binary.BigEndian.Uint32(e[nameLen:])))
		length := int(int32(binary.BigEndian.Uint32(e[nameLen+4:])))
		if name == "" || start < 0 || length <= 0 || data+start+length > final {
			return nil, fmt.Errorf("%w: index entry %q (%d+%d)", ErrFormat, name, start, length)
		}
		db.zones[name] = [2]int{data + start, data + start + length}
	}
	return db, nil
}

// Version is the database's release ("2025b").
func (db *DB) Version() string { return db.version }

// Len is how many zones it has.
func (db *DB) Len() int { return len(db.zones) }

// Load returns the named zone ("Asia/Shanghai").
func (db *DB) Load(name string) (*time.Location, error) {
	r, ok := db.zones[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoZone, name)
	}
	loc, err := time.LoadLocationFromTZData(name, db.data[r[0]:r[1]])
	if err != nil {
		return nil, fmt.Errorf("tzdata: zone %q: %w", name, err)
	}
	return loc, nil
}
