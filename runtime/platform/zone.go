package platform

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/platform/tzdata"
)

// setupZone sets time.Local from $TZ or persist.sys.timezone, as bionic
// picks it.
func (p *Platform) setupZone(sys *system) {
	name, source := sys.getenv("TZ"), "TZ"
	if name == "" {
		name, source = sys.getprop(PropTimeZone), PropTimeZone
	}
	name = strings.TrimPrefix(name, ":")
	if name == "" {
		// bionic's default when the property is unset.
		p.location, p.info.TimeZone, p.info.TimeZoneSource, p.info.TZData = time.UTC, "UTC", "none", "none"
		time.Local = time.UTC
		p.info.Problems = append(p.info.Problems, PropTimeZone+" is not set: the device runs in UTC")
		return
	}
	loc, from, err := loadZone(sys, name)
	if err != nil {
		p.info.TimeZone, p.info.TimeZoneSource, p.info.TZData = time.Local.String(), source, "none"
		p.info.Problems = append(p.info.Problems, err.Error())
		return
	}
	time.Local = loc
	p.location, p.info.TimeZone, p.info.TimeZoneSource, p.info.TZData = loc, loc.String(), source, from
}

// loadZone loads name from the device's tzdata (updated with the tzdata
// APEX, so newer than the binary's), else from the binary's embedded copy.
func loadZone(sys *system, name string) (*time.Location, string, error) {
	for _, path := range tzdata.Paths {
		db, err := tzdata.Open(sys.path(path))
		if err != nil {
			continue
		}
		if loc, err := db.Load(name); err == nil {
			return loc, path + " (" + db.Version() + ")", nil
		}
	}
	// No zoneinfo folder exists on Android: LoadLocation falls back to
	// the tzdata embedded by time/tzdata.
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, "", fmt.Errorf("time zone %q: %w", name, err)
	}
	return loc, "embedded", nil
}
