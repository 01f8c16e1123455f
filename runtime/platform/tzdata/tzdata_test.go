package tzdata

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/tzdata is a bionic tzdata file of release 2025b holding
// Asia/Shanghai, America/New_York and UTC (the host's TZif files, packed
// as a virtual device packs them; a phone's file has every zone).
func TestOpenFixture(t *testing.T) {
	db, err := Open("testdata/tzdata")
	require.NoError(t, err)
	assert.Equal(t, "2025b", db.Version())
	assert.Equal(t, 3, db.Len())

	sh, err := db.Load("Asia/Shanghai")
	require.NoError(t, err)
	assert.Equal(t, "Asia/Shanghai", sh.String())
	// 23:00 UTC is 07:00 the next morning in Shanghai.
	at := time.Date(2030, 1, 15, 23, 0, 0, 0, time.UTC).In(sh)
	assert.Equal(t, "2030-01-16T07:00:00+08:00", at.Format(time.RFC3339))

	ny, err := db.Load("America/New_York")
	require.NoError(t, err)
	assert.Equal(t, "2030-07-01T08:00:00-04:00", time.Date(2030, 7, 1, 12, 0, 0, 0, time.UTC).In(ny).Format(time.RFC3339), "summer time")

	_, err = db.Load("Europe/Berlin")
	require.ErrorIs(t, err, ErrNoZone)
}

func TestParseRefusesBrokenFiles(t *testing.T) {
	good, err := os.ReadFile("testdata/tzdata")
	require.NoError(t, err)
	mod := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"empty":             nil,
		"no magic":          mod(func(b []byte) { copy(b, "zzdata") }),
		"index beyond file": mod(func(b []byte) { binary.BigEndian.PutUint32(b[12:], 1<<30) }),
		"ragged index":      mod(func(b []byte) { binary.BigEndian.PutUint32(b[16:], binary.BigEndian.Uint32(b[16:])-1) }),
		"zone past data":    mod(func(b []byte) { binary.BigEndian.PutUint32(b[24+44:], 1<<20) }),
	} {
		_, err := Parse(b)
		assert.ErrorIs(t, err, ErrFormat, name)
	}
}

// FuzzParse: any bytes are a database or ErrFormat, and every zone of a
// database that parses is either loaded or refused, never a panic.
func FuzzParse(f *testing.F) {
	good, err := os.ReadFile("testdata/tzdata")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		db, err := Parse(b)
		if err != nil {
			require.ErrorIs(t, err, ErrFormat)
			return
		}
		for name := range db.zones {
			db.Load(name)
		}
	})
}
