package jobs_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/jobs"
)

func TestScanJudgesEachSlot(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	h := time.Hour
	slots := []time.Time{t0, t0.Add(h), t0.Add(2 * h), t0.Add(3 * h), t0.Add(4 * h), t0.Add(5 * h), t0.Add(6 * h), t0.Add(7 * h), t0.Add(8 * h)}
	runs := []jobs.Run{
		{ID: "early-but-ok", Start: t0.Add(-10 * time.Second), End: t0.Add(time.Minute)},
		// slot 1: nothing
		{ID: "late", Start: t0.Add(2*h + 10*time.Minute), End: t0.Add(2*h + 11*time.Minute)},
		{ID: "failed", Start: t0.Add(3 * h), End: t0.Add(3*h + time.Minute), Failed: true},
		{ID: "too-long", Start: t0.Add(4 * h), End: t0.Add(4*h + 20*time.Minute)},
		{ID: "still-going", Start: t0.Add(5 * h), End: time.Time{}},
		{ID: "overlaps", Start: t0.Add(6 * h), End: t0.Add(6*h + time.Minute)},
		{ID: "running-now", Start: t0.Add(8 * h)},
	}
	now := t0.Add(8*h + 2*time.Minute)
	got := jobs.Scan(slots, runs, now, jobs.Expect{Grace: 5 * time.Minute, MaxDuration: 10 * time.Minute})
	want := []jobs.SlotStatus{jobs.SlotOK, jobs.SlotMissed, jobs.SlotLate, jobs.SlotFailed, jobs.SlotOverran, jobs.SlotOverran, jobs.SlotOverlapping, jobs.SlotMissed, jobs.SlotRunning}
	for i := range want {
		if got[i].Status != want[i] {
			t.Errorf("slot %d (%s): %s, want %s", i, slots[i].Format("15:04"), got[i].Status, want[i])
		}
	}
	if got[0].Run != 0 || got[1].Run != -1 {
		t.Errorf("run indexes: %d, %d", got[0].Run, got[1].Run)
	}
}

func TestScanAtTheEdgeOfTheGrace(t *testing.T) {
	at := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	slots := []time.Time{at}
	e := jobs.Expect{Grace: 10 * time.Minute}
	if s := jobs.Scan(slots, nil, at.Add(10*time.Minute-time.Nanosecond), e)[0].Status; s != jobs.SlotPending {
		t.Errorf("a nanosecond inside the grace: %s, want pending", s)
	}
	if s := jobs.Scan(slots, nil, at.Add(10*time.Minute), e)[0].Status; s != jobs.SlotMissed {
		t.Errorf("at the end of the grace: %s, want missed", s)
	}
	onTime := []jobs.Run{{Start: at.Add(10 * time.Minute), End: at.Add(11 * time.Minute)}}
	if s := jobs.Scan(slots, onTime, at.Add(time.Hour), e)[0].Status; s != jobs.SlotOK {
		t.Errorf("a run starting at the last instant of the grace: %s, want ok", s)
	}
	late := []jobs.Run{{Start: at.Add(10*time.Minute + time.Nanosecond), End: at.Add(11 * time.Minute)}}
	if s := jobs.Scan(slots, late, at.Add(time.Hour), e)[0].Status; s != jobs.SlotLate {
		t.Errorf("a run a nanosecond after the grace: %s, want late", s)
	}
}

func BenchmarkScanYearOfMinutelySlots(b *testing.B) {
	loc, _ := jobs.LoadZone("Europe/Berlin")
	c, err := jobs.ParseCron("0 * * * * *", loc)
	if err != nil {
		b.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
	to := from.AddDate(1, 0, 0)
	slots := c.Slots(from, to)
	runs := make([]jobs.Run, 0, len(slots))
	for i, s := range slots {
		if i%997 == 0 {
			continue // a few gaps
		}
		runs = append(runs, jobs.Run{Start: s.Add(2 * time.Second), End: s.Add(20 * time.Second), Failed: i%1009 == 0})
	}
	b.ReportMetric(float64(len(slots)), "slots")
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			jobs.Scan(slots, runs, to, jobs.Expect{Grace: time.Minute, MaxDuration: 5 * time.Minute})
		}
	})
	b.Run("slots+scan", func(b *testing.B) {
		for b.Loop() {
			jobs.Scan(c.Slots(from, to), runs, to, jobs.Expect{Grace: time.Minute, MaxDuration: 5 * time.Minute})
		}
	})
}

// The host's timer status is a second witness: the slot it fired in had
// no report, and is "ran, not reported" instead of missed; the slots
// around it keep their verdicts.
func TestTheTimerStatusWitnessesAnUnreportedRun(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	slots := []time.Time{t0, t0.Add(time.Hour), t0.Add(2 * time.Hour)}
	now := t0.Add(2*time.Hour + 30*time.Minute)
	for _, tc := range []struct {
		name  string
		fired time.Time
		want  string
	}{
		{"fired in the second slot", t0.Add(time.Hour + 2*time.Second), "missed ran, not reported missed"},
		{"fired a little early (clock skew)", t0.Add(time.Hour - 5*time.Second), "missed ran, not reported missed"},
		{"fired in the last slot", t0.Add(2 * time.Hour), "missed missed ran, not reported"},
		{"fired before every slot", t0.Add(-2 * time.Hour), "missed missed missed"},
		{"never fired", time.Time{}, "missed missed missed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := jobs.Scan(slots, nil, now, jobs.Expect{Grace: time.Minute})
			jobs.Witness(res, tc.fired)
			var got []string
			for _, r := range res {
				got = append(got, r.Status.String())
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("slots = %v, want %s", got, tc.want)
			}
		})
	}
	// A witnessed latest slot makes the job up, not missing.
	res := jobs.Scan(slots, nil, now, jobs.Expect{Grace: time.Minute})
	jobs.Witness(res, t0.Add(2*time.Hour+time.Second))
	if st := jobs.StatusOf(jobs.Job{}, res, nil, false, now); st != jobs.Up {
		t.Errorf("status = %s, want up", st)
	}
}

func TestConsecutiveMissedSlotsAreOneGap(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 6, 35, 0, 0, time.UTC)
	var res []jobs.SlotResult
	status := []jobs.SlotStatus{jobs.SlotOK, jobs.SlotMissed, jobs.SlotMissed, jobs.SlotMissed, jobs.SlotOK, jobs.SlotFailed, jobs.SlotMissed, jobs.SlotLate, jobs.SlotMissed, jobs.SlotMissed}
	for i, s := range status {
		res = append(res, jobs.SlotResult{At: t0.Add(time.Duration(i) * 5 * time.Minute), Status: s, Run: -1})
	}
	var got []string
	for _, g := range jobs.Gaps(res, 10) {
		got = append(got, g.From.Format("15:04")+"-"+g.To.Format("15:04")+" "+g.Status.String()+" x"+strconv.Itoa(g.Slots))
	}
	want := "07:15-07:20 missed x2 07:10-07:10 late x1 07:05-07:05 missed x1 07:00-07:00 failed x1 06:40-06:50 missed x3"
	if strings.Join(got, " ") != want {
		t.Errorf("gaps:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if g := jobs.Gaps(res, 10)[4]; len(g.Each) != 3 || !g.Each[0].Equal(g.From) || !g.Each[2].Equal(g.To) {
		t.Errorf("the oldest range's slots = %v, want its three, oldest first", g.Each)
	}
	if n := len(jobs.Gaps(res, 2)); n != 2 {
		t.Errorf("limit 2 gave %d gaps", n)
	}
}
