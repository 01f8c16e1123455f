package alarm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// fixture is the app opened for one test (sampletest.Fixture) with its
// system directory (the device's shared one) under the same temporary
// directory.
type fixture struct {
	*sampletest.Fixture[*App]
	sys string
}

// newFixture opens an app in a temp dir with a clock fixed at now (local
// wall time "2006-01-02T15:04" in zone).
func newFixture(t testing.TB, zone, now string) *fixture {
	t.Helper()
	f := &fixture{}
	f.Fixture = sampletest.NewFixture(t, zone, now, func(dir string, clock func() time.Time, loc *time.Location) (*App, error) {
		f.sys = filepath.Join(dir, "system")
		return Open(context.Background(), filepath.Join(dir, "app"), &Options{
			Clock: clock, Location: loc, SystemDir: f.sys,
		})
	})
	return f
}

// state is a full dump, for before/after comparisons.
func (f *fixture) state() string { return snapshot(f.T, f.App) }

func snapshot(t testing.TB, app *App) string {
	d, err := app.dump(context.Background(), 0, maxDumpLimit)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d)
	return string(b)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
