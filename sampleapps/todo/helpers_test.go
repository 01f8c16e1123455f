package todo

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// fixture is the app opened for one test (sampletest.Fixture).
type fixture struct {
	*sampletest.Fixture[*App]
}

// newFixture opens an app in a temp dir with a clock fixed at now (local
// wall time "2006-01-02T15:04" in zone).
func newFixture(t testing.TB, zone, now string) *fixture {
	t.Helper()
	f := &fixture{}
	f.Fixture = sampletest.NewFixture(t, zone, now, func(dir string, clock func() time.Time, loc *time.Location) (*App, error) {
		return Open(context.Background(), filepath.Join(dir, "app"), &Options{
			Clock: clock, Location: loc, Rand: rand.NewChaCha8([32]byte{7}),
		})
	})
	return f
}

// state is a full dump, for before/after comparisons.
func (f *fixture) state() string { return snapshot(f.T, f.App) }

func snapshot(t testing.TB, app *App) string {
	d, err := app.dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d)
	return string(b)
}

// create makes a to-do and returns its id.
func (f *fixture) create(args string) string {
	f.T.Helper()
	return f.OK("todo_create", args)["id"].(string)
}
