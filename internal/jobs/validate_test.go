package jobs_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

func TestValidateNamesEachBadField(t *testing.T) {
	j := jobs.Job{Name: "", Slug: "Bad Slug", Schedule: "0 0 25 * * *", TimeZone: "Asia/Tokyo", Grace: -time.Minute, MaxDuration: -1,
		Function: "1x", Recipients: []string{"nope"}}
	var v jobs.ValidationError
	if err := j.Validate(); !errors.As(err, &v) {
		t.Fatalf("got %v", err)
	}
	got := map[string]string{}
	for _, f := range v {
		got[f.Field] = f.Message
	}
	for field, want := range map[string]string{"name": "1 to 100", "slug": "lower-case", "schedule": "hour field", "grace": "negative",
		"max_duration": "negative", "function": "function name", "app": "function app", "recipients": "not an e-mail"} {
		if !strings.Contains(got[field], want) {
			t.Errorf("%s: %q, want it to say %q", field, got[field], want)
		}
	}
	bad := jobs.Job{Name: "x", Schedule: "* * * * *", TimeZone: "Atlantis/Capital"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "time_zone") {
		t.Errorf("unknown zone: %v", err)
	}
	if err := (jobs.Job{Name: "x", Schedule: "every 0s"}).Validate(); err == nil || !strings.Contains(err.Error(), "every 15m") {
		t.Errorf("every 0s: %v", err)
	}
}

func TestNextRunsPreview(t *testing.T) {
	j := jobs.Job{Name: "Nightly", Schedule: "0 0 1 * * *", TimeZone: "Tokyo Standard Time"}
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) // 18:00 in Tokyo
	got, err := j.NextRuns(now, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || !got[0].Equal(time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC)) || !got[4].Equal(time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)) {
		t.Errorf("next runs = %v", got)
	}
	yearly, _ := jobs.Job{Name: "New year", Schedule: "0 0 1 1 *", TimeZone: "UTC"}.NextRuns(now, 2)
	if len(yearly) != 2 || yearly[1].Year() != 2028 {
		t.Errorf("a yearly job's next runs = %v", yearly)
	}
	if id := jobs.NewID(); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("NewID = %q, not a v4 UUID", id)
	}
}
