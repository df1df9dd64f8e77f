package jobs_test

import (
	"errors"
	"testing"

	"github.com/fusebox/fusebox/internal/jobs"
)

func TestParseActionReadsHealthchecksURLs(t *testing.T) {
	for action, want := range map[string]struct {
		ev   jobs.RunEvent
		exit int
		err  error
	}{
		"": {jobs.EventSuccess, 0, nil}, "start": {jobs.EventStart, -1, nil}, "fail": {jobs.EventFailure, -1, nil}, "log": {jobs.EventLog, -1, nil},
		"0": {jobs.EventSuccess, 0, nil}, "3": {jobs.EventFailure, 3, nil}, "255": {jobs.EventFailure, 255, nil},
		"256": {err: jobs.ErrExitStatus}, "-1": {err: jobs.ErrNotAnAction}, "stop": {err: jobs.ErrNotAnAction},
	} {
		ev, exit, err := jobs.ParseAction(action)
		if want.err != nil {
			if !errors.Is(err, want.err) {
				t.Errorf("%q: error %v, want %v", action, err, want.err)
			}
			continue
		}
		if err != nil || ev != want.ev || exit != want.exit {
			t.Errorf("%q: %v %d %v, want %v %d", action, ev, exit, err, want.ev, want.exit)
		}
	}
}
