package jobs

import (
	"fmt"
	"sync"
	"time"
)

// windowsZones maps the Windows time zone ids that Windows plans take in
// WEBSITE_TIME_ZONE to IANA names (from CLDR's windowsZones, the common ones).
var windowsZones = map[string]string{
	"UTC": "UTC", "GMT Standard Time": "Europe/London", "Greenwich Standard Time": "Atlantic/Reykjavik",
	"W. Europe Standard Time": "Europe/Berlin", "Central Europe Standard Time": "Europe/Budapest",
	"Central European Standard Time": "Europe/Warsaw", "Romance Standard Time": "Europe/Paris",
	"E. Europe Standard Time": "Europe/Chisinau", "FLE Standard Time": "Europe/Kiev", "GTB Standard Time": "Europe/Bucharest",
	"Russian Standard Time": "Europe/Moscow", "Turkey Standard Time": "Europe/Istanbul", "Israel Standard Time": "Asia/Jerusalem",
	"South Africa Standard Time": "Africa/Johannesburg", "Arabian Standard Time": "Asia/Dubai", "India Standard Time": "Asia/Kolkata",
	"SE Asia Standard Time": "Asia/Bangkok", "China Standard Time": "Asia/Shanghai", "Singapore Standard Time": "Asia/Singapore",
	"Taipei Standard Time": "Asia/Taipei", "Tokyo Standard Time": "Asia/Tokyo", "Korea Standard Time": "Asia/Seoul",
	"AUS Eastern Standard Time": "Australia/Sydney", "E. Australia Standard Time": "Australia/Brisbane",
	"Cen. Australia Standard Time": "Australia/Adelaide", "W. Australia Standard Time": "Australia/Perth",
	"Lord Howe Standard Time": "Australia/Lord_Howe", "New Zealand Standard Time": "Pacific/Auckland",
	"Eastern Standard Time": "America/New_York", "Central Standard Time": "America/Chicago",
	"Mountain Standard Time": "America/Denver", "US Mountain Standard Time": "America/Phoenix",
	"Pacific Standard Time": "America/Los_Angeles", "Alaskan Standard Time": "America/Anchorage",
	"Hawaiian Standard Time": "Pacific/Honolulu", "Atlantic Standard Time": "America/Halifax",
	"E. South America Standard Time": "America/Sao_Paulo", "Argentina Standard Time": "America/Buenos_Aires",
	"Canada Central Standard Time": "America/Regina", "Mexico Standard Time": "America/Mexico_City",
}

// LoadZone reads an IANA name ("Asia/Tokyo") or a Windows id ("Tokyo
// Standard Time"), as WEBSITE_TIME_ZONE takes on Linux and Windows plans.
func LoadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if len(name) > MaxZoneLen {
		return nil, fmt.Errorf("jobs: a time zone's name is at most %d characters: use an IANA name such as Asia/Tokyo or a Windows id such as Tokyo Standard Time", MaxZoneLen)
	}
	if iana, ok := windowsZones[name]; ok {
		name = iana
	}
	unknown := fmt.Errorf("jobs: unknown time zone %q: use an IANA name such as Asia/Tokyo or a Windows id such as Tokyo Standard Time", name)
	zones.mu.Lock()
	loc, ok := zones.m[name]
	zones.mu.Unlock()
	if ok {
		if loc == nil {
			return nil, unknown
		}
		return loc, nil
	}
	loc, err := time.LoadLocation(name)
	// Names the database does not know are kept too (as nil), so a row
	// naming one costs a lookup, not a read of the database; the map
	// starts over past maxZones.
	zones.mu.Lock()
	if len(zones.m) >= maxZones {
		clear(zones.m)
	}
	zones.m[name] = loc
	zones.mu.Unlock()
	if err != nil {
		return nil, unknown
	}
	return loc, nil
}

// MaxZoneLen bounds a time zone's name: the longest IANA and Windows
// names are about 40 characters.
const MaxZoneLen = 64

// maxZones bounds what zones keeps.
const maxZones = 2048

// zones keeps the zones loaded: loading one reads the zone database.
var zones = struct {
	mu sync.Mutex
	m  map[string]*time.Location
}{m: map[string]*time.Location{}}
