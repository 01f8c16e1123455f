package admin

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Perm is a set of peer classes. A connection's peer belongs to one or
// more classes by its uid; a method admits the classes in its Perm.
type Perm uint8

const (
	// Root is uid 0: the owner through `su`, and the lab.
	Root Perm = 1 << iota
	// Shell is uid 2000: the owner through `adb shell` (adbd).
	Shell
	// Runtime is the runtime's own uid (its UI and its own tools).
	Runtime

	// Owner is every admitted peer.
	Owner = Root | Shell | Runtime
)

// Well-known uids of the peer classes.
const (
	RootUID  = 0
	ShellUID = 2000
)

func (p Perm) String() string {
	var parts []string
	for _, c := range []struct {
		p    Perm
		name string
	}{{Root, "root"}, {Shell, "shell"}, {Runtime, "runtime"}} {
		if p&c.p != 0 {
			parts = append(parts, c.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Handler answers one method call. The result is marshalled as JSON (nil
// is sent as null). Errors should be *errcode.Error; anything else reaches
// the peer as internal, without its text.
type Handler func(ctx context.Context, c *Call) (any, error)

// Method is one entry of the method table.
type Method struct {
	// Name is "<group>.<verb>" (lowercase letters, digits, '_', '-', dots
	// between parts), or a single word for top-level methods ("status").
	Name string
	// Perm lists the peer classes the method admits; others get forbidden.
	Perm Perm
	// Summary is one line for `agentosd ctl methods`.
	Summary string
	// Timeout bounds one call; zero means DefaultTimeout.
	Timeout time.Duration
	// Handle answers the call.
	Handle Handler
}

// DefaultTimeout bounds a method call whose Method.Timeout is zero.
const DefaultTimeout = 60 * time.Second

var methodName = regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$`)

func (m Method) check() error {
	switch {
	case len(m.Name) > 64 || !methodName.MatchString(m.Name):
		return fmt.Errorf("admin: bad method name %q", m.Name)
	case m.Perm == 0 || m.Perm&^Owner != 0:
		return fmt.Errorf("admin: method %s: bad permission %d", m.Name, m.Perm)
	case m.Handle == nil:
		return fmt.Errorf("admin: method %s: nil handler", m.Name)
	case m.Timeout < 0:
		return fmt.Errorf("admin: method %s: negative timeout", m.Name)
	}
	return nil
}

// table is a method table sorted by name.
type table struct {
	methods []Method
}

// add inserts ms keeping the table sorted. A duplicate or malformed
// method is a programming error and panics.
func (t *table) add(ms ...Method) {
	for _, m := range ms {
		if err := m.check(); err != nil {
			panic(err.Error())
		}
		i, found := slices.BinarySearchFunc(t.methods, m.Name, func(e Method, name string) int {
			return strings.Compare(e.Name, name)
		})
		if found {
			panic("admin: method registered twice: " + m.Name)
		}
		t.methods = slices.Insert(t.methods, i, m)
	}
}

func (t *table) lookup(name string) (Method, bool) {
	i, found := slices.BinarySearchFunc(t.methods, name, func(e Method, name string) int {
		return strings.Compare(e.Name, name)
	})
	if !found {
		return Method{}, false
	}
	return t.methods[i], true
}

func (t *table) sorted() bool {
	return slices.IsSortedFunc(t.methods, func(a, b Method) int { return strings.Compare(a.Name, b.Name) })
}
