package jobs

import (
	"fmt"
	"time"
)

// Tally is the jobs' state for metrics, as the scanner last judged it:
// jobs by status, and the ones missing or failing. The scanner stores it,
// so every instance exports the same figures.
type Tally struct {
	At       time.Time
	ByStatus map[string]int
	Down     []DownJob // at most MaxDown
}

// DownJob is a job that is missing or failing. Label names it on
// /metrics: its slug, else its name, unique among the jobs down. Never its
// id, which pinged jobs before ping tokens (and still does for a migrated
// job's grace), nor its ping token.
type DownJob struct {
	Label, Name, Status string
	LastRunAt           time.Time // zero if it never ran
}

// MaxDown bounds the per-job series.
const MaxDown = 200

// TallyOf counts jobs by the status the scanner gave them.
func TallyOf(js []Job, now time.Time) Tally {
	t := Tally{At: now, ByStatus: map[string]int{}}
	for _, s := range statusNames {
		t.ByStatus[s] = 0
	}
	labels := map[string]int{}
	for _, j := range js {
		t.ByStatus[j.Status.String()]++
		if (j.Status == Missing || j.Status == Failing) && len(t.Down) < MaxDown {
			label := j.Slug
			if label == "" {
				label = j.Name
			}
			if labels[label]++; labels[label] > 1 {
				label = fmt.Sprintf("%s #%d", label, labels[label])
			}
			t.Down = append(t.Down, DownJob{Label: label, Name: j.Name, Status: j.Status.String(), LastRunAt: j.LastRunAt})
		}
	}
	return t
}
