package apptool

import (
	"errors"
	"testing"
	"time"
)

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func TestWall(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	berlin := mustLoad(t, "Europe/Berlin")
	sh := mustLoad(t, "Asia/Shanghai")
	tests := []struct {
		name string
		d    Date
		h, m int
		loc  *time.Location
		want string
	}{
		{"plain utc", Date{2026, 10, 12}, 7, 0, time.UTC, "2026-10-12T07:00:00+00:00"},
		{"plain shanghai", Date{2026, 10, 12}, 7, 0, sh, "2026-10-12T07:00:00+08:00"},
		{"ny gap 02:30 -> 03:00", Date{2026, 3, 8}, 2, 30, ny, "2026-03-08T03:00:00-04:00"},
		{"ny gap 02:00 -> 03:00", Date{2026, 3, 8}, 2, 0, ny, "2026-03-08T03:00:00-04:00"},
		{"ny just before gap", Date{2026, 3, 8}, 1, 59, ny, "2026-03-08T01:59:00-05:00"},
		{"ny after gap", Date{2026, 3, 8}, 3, 0, ny, "2026-03-08T03:00:00-04:00"},
		{"ny overlap takes first", Date{2026, 11, 1}, 1, 30, ny, "2026-11-01T01:30:00-04:00"},
		{"berlin gap", Date{2026, 3, 29}, 2, 30, berlin, "2026-03-29T03:00:00+02:00"},
		{"berlin overlap", Date{2026, 10, 25}, 2, 30, berlin, "2026-10-25T02:30:00+02:00"},
		{"24:00 is next midnight", Date{2026, 12, 31}, 24, 0, sh, "2027-01-01T00:00:00+08:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ISO(Wall(tt.d, tt.h, tt.m, tt.loc), tt.loc); got != tt.want {
				t.Fatalf("Wall = %s, want %s", got, tt.want)
			}
		})
	}
}

// A zone whose midnight falls in the gap (Santiago, September 2026).
func TestStartOfDayInMidnightGap(t *testing.T) {
	loc := mustLoad(t, "America/Santiago")
	got := StartOfDay(Date{2026, 9, 6}, loc)
	if ISO(got, loc) != "2026-09-06T01:00:00-03:00" {
		t.Fatalf("got %s", ISO(got, loc))
	}
}

func TestParseMoment(t *testing.T) {
	sh := mustLoad(t, "Asia/Shanghai")
	tests := []struct {
		in            string
		requireOffset bool
		want          string // ISO in Shanghai, or "" for an error
		dateOnly      bool
		err           error
	}{
		{"2026-10-12", false, "2026-10-12T00:00:00+08:00", true, nil},
		{"2026-10-12T15:00:00+08:00", true, "2026-10-12T15:00:00+08:00", false, nil},
		{"2026-10-12T07:00:00Z", true, "2026-10-12T15:00:00+08:00", false, nil},
		{"2026-10-12T15:00+0800", true, "2026-10-12T15:00:00+08:00", false, nil},
		{"2026-10-12 15:00:30.250-04:00", true, "2026-10-13T03:00:30+08:00", false, nil},
		{"2026-10-12T15:00", false, "2026-10-12T15:00:00+08:00", false, nil},
		{"2026-10-12T15:00", true, "", false, ErrNoOffset},
		{"2026-02-30", false, "", false, ErrBadMoment},
		{"2026-10-12T24:00:00Z", false, "", false, ErrBadMoment},
		{"2026-10-12T15:00:00+25:00", false, "", false, ErrBadMoment},
		{"tomorrow", false, "", false, ErrBadMoment},
		{"", false, "", false, ErrBadMoment},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			m, err := ParseMoment(tt.in, sh, tt.requireOffset)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ISO(m.Time, sh); got != tt.want || m.DateOnly != tt.dateOnly {
				t.Fatalf("got %s dateOnly=%v, want %s %v", got, m.DateOnly, tt.want, tt.dateOnly)
			}
		})
	}
}

func TestParseClock(t *testing.T) {
	tests := []struct {
		in      string
		allow24 bool
		want    int
		ok      bool
	}{
		{"09:00", false, 540, true}, {"7:05", false, 425, true}, {"23:59", false, 1439, true},
		{"24:00", true, 1440, true}, {"24:00", false, 0, false}, {"24:01", true, 0, false},
		{"9:5", false, 0, false}, {"12:60", false, 0, false}, {"", false, 0, false}, {"123:00", false, 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseClock(tt.in, tt.allow24)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseClock(%q, %v) = %d, %v", tt.in, tt.allow24, got, ok)
		}
	}
}

func TestDateArithmetic(t *testing.T) {
	d := Date{2028, 2, 28}
	if d.AddDays(1) != (Date{2028, 2, 29}) || d.AddDays(2) != (Date{2028, 3, 1}) {
		t.Fatal("AddDays across a leap day")
	}
	if d.DaysUntil(Date{2029, 2, 28}) != 366 || (Date{2026, 10, 12}).Weekday() != time.Monday {
		t.Fatal("DaysUntil / Weekday")
	}
	if d.Compare(Date{2028, 3, 1}) != -1 || d.Compare(d) != 0 || d.Compare(Date{2027, 12, 31}) != 1 {
		t.Fatal("Compare")
	}
}

func FuzzParseMoment(f *testing.F) {
	for _, s := range []string{"2026-10-12", "2026-10-12T15:00:00+08:00", "2026-10-12T15:00Z", "2026-10-12 01:02:03.5-0930", "x"} {
		f.Add(s, false)
	}
	ny := mustLoad(f, "America/New_York")
	f.Fuzz(func(t *testing.T, s string, requireOffset bool) {
		m, err := ParseMoment(s, ny, requireOffset)
		if err != nil {
			if !errors.Is(err, ErrBadMoment) && !errors.Is(err, ErrNoOffset) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !m.Date.Valid() {
			t.Fatalf("invalid date %v from %q", m.Date, s)
		}
		if _, off := m.Time.In(ny).Zone(); m.HasOffset && off%60 == 0 {
			// Round trip through the output format keeps the instant (the
			// format has no seconds of offset, which only local mean time
			// before 1883 uses).
			back, err := ParseMoment(ISO(m.Time, ny), ny, true)
			if err != nil || !back.Time.Equal(m.Time.Truncate(time.Second)) {
				t.Fatalf("round trip of %q: %v %v", s, back.Time, err)
			}
		}
	})
}

func TestDeviceLocation(t *testing.T) {
	t.Setenv("TZ", "Asia/Shanghai")
	if got := DeviceLocation().String(); got != "Asia/Shanghai" {
		t.Fatalf("TZ=Asia/Shanghai: %s", got)
	}
	t.Setenv("TZ", "Not/AZone")
	if DeviceLocation() == nil {
		t.Fatal("nil location")
	}
}
