package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/jobs"
	"github.com/fusebox/fusebox/internal/views"
)

// jobList shows every job, or those with ?tag= and in ?status=.
func (s *JobPages) jobList(c echo.Context) error {
	apps, err := s.Apps.List(c.Request().Context())
	if err != nil {
		return err
	}
	all, err := s.Jobs.List(c.Request().Context())
	if err != nil {
		return err
	}
	sc := scopeOf(c)
	all, apps = sc.Jobs(access.TeamOf(apps), all), sc.Apps(apps)
	tag, status := c.QueryParam("tag"), c.QueryParam("status")
	js, problem := filterJobs(all, tag, status)
	weeks, err := s.weeks.all(c, js)
	if err != nil {
		return err
	}
	m := views.Jobs{Page: s.page(c, "Jobs", "jobs"), Rows: jobRows(apps, js, weeks), CanCreate: scopeOf(c).ActsAnywhere(), Tag: tag, Status: status, Tags: tagsOf(all)}
	code := http.StatusOK
	if problem != "" {
		m.Flash = &views.Flash{Kind: "error", Text: problem}
		code = http.StatusUnprocessableEntity
	}
	if team, ok := sc.BadgeTeam(); ok && scopeOf(c).ActsAnywhere() && len(m.Tags) > 0 {
		m.BadgeBase = strings.TrimRight(s.Config.BaseURL.String(), "/") + "/badge/" + s.badgeKey(team) + "/"
	}
	return render(c, code, views.JobsPage(m))
}

// filterJobs keeps the jobs with tag (if given) in status (if given); an
// unknown tag or status is said, and nothing is kept.
func filterJobs(js []jobs.Job, tag, status string) ([]jobs.Job, string) {
	if tag != "" && !slices.Contains(tagsOf(js), tag) {
		return nil, fmt.Sprintf("No job has the tag %q.", tag)
	}
	var want jobs.Status
	if status != "" {
		st, err := jobs.ParseStatus(status)
		if err != nil {
			return nil, fmt.Sprintf("%q is not a status: new, up, late, missing, failing or paused.", status)
		}
		want = st
	}
	var out []jobs.Job
	for _, j := range js {
		if (tag == "" || j.HasTag(tag)) && (status == "" || j.Status == want) {
			out = append(out, j)
		}
	}
	return out, ""
}

func tagsOf(js []jobs.Job) []string {
	var out []string
	for _, j := range js {
		for _, t := range j.Tags {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// badgeKey is the unguessable part of badge URLs: derived from the session
// key, so it is the same on every instance and changes with it. A team's
// badges have a key of their own and count only its jobs; "" is every job's.
func (s *JobPages) badgeKey(team string) string {
	m := hmac.New(sha256.New, []byte(s.Config.Session.Key.Reveal()))
	m.Write([]byte("fusebox-badge\x00"))
	if team != "" {
		m.Write([]byte("team\x00" + team))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// badgeScope finds whose badge key was given: every job's, or a team's.
// Every key is compared, in constant time.
func (s *JobPages) badgeScope(c echo.Context) (team string, ok bool, err error) {
	key := []byte(c.Param("key"))
	ok = subtle.ConstantTimeCompare(key, []byte(s.badgeKey(""))) == 1
	ts, err := s.allTeams(c)
	if err != nil {
		return "", false, err
	}
	for _, t := range ts {
		if subtle.ConstantTimeCompare(key, []byte(s.badgeKey(t.Name))) == 1 {
			team, ok = t.Name, true
		}
	}
	return team, ok, nil
}

var badgeColours = map[string]string{"up": "#2e9e5b", "late": "#d98b1a", "down": "#c9352b", "no jobs": "#8a8f98"}

// badge answers /badge/<key>/<tag>.svg and .json (a Shields endpoint):
// the worst status of the tag's jobs.
func (s *JobPages) badge(c echo.Context) error {
	team, ok, err := s.badgeScope(c)
	if err != nil {
		return err
	}
	if !ok {
		return c.String(http.StatusNotFound, "not found")
	}
	name := c.Param("file")
	tag, kind := strings.TrimSuffix(name, ".svg"), "svg"
	if strings.HasSuffix(name, ".json") {
		tag, kind = strings.TrimSuffix(name, ".json"), "json"
	} else if !strings.HasSuffix(name, ".svg") {
		return c.String(http.StatusNotFound, "not found")
	}
	js, err := s.Jobs.List(c.Request().Context())
	if err != nil {
		return err
	}
	owners, err := s.owners(c)
	if err != nil {
		return err
	}
	var tagged []jobs.Job
	for _, j := range js {
		if team != "" && (jobs.InternalID(j.ID) || access.JobTeam(owners, j) != team) {
			continue
		}
		if j.HasTag(tag) && j.Status != jobs.Paused && j.Status != jobs.New {
			tagged = append(tagged, j)
		}
	}
	msg := jobs.Badge(tagged)
	c.Response().Header().Set("Cache-Control", "no-cache")
	if kind == "json" {
		colour := map[string]string{"up": "brightgreen", "late": "orange", "down": "red", "no jobs": "lightgrey"}[msg]
		return c.JSON(http.StatusOK, map[string]any{"schemaVersion": 1, "label": tag, "message": msg, "color": colour})
	}
	lw, mw := 6*len(tag)+12, 6*len(msg)+12
	svg := fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s: %s"><title>%s: %s</title>`+
		`<rect width="%d" height="20" fill="#555"/><rect x="%d" width="%d" height="20" fill="%s"/>`+
		`<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11"><text x="6" y="14">%s</text><text x="%d" y="14">%s</text></g></svg>`,
		lw+mw, escapeXML(tag), msg, escapeXML(tag), msg, lw, lw, mw, badgeColours[msg], escapeXML(tag), lw+6, msg)
	return c.Blob(http.StatusOK, "image/svg+xml", []byte(svg))
}

func escapeXML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
