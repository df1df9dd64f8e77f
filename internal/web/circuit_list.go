package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/views"
)

// circuitList shows every circuit with its failures now, filtered by app
// and state. htmx asks for the body alone to refresh it.
func (s *CircuitPages) circuitList(c echo.Context) error {
	ctx := c.Request().Context()
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return err
	}
	all, err := s.Circuits.Recent(ctx, listFreshness)
	if err != nil {
		return err
	}
	sc := scopeOf(c)
	all, apps = sc.Circuits(access.TeamOf(apps), all), sc.Apps(apps)
	appFilter, stateFilter, search := c.QueryParam("app"), c.QueryParam("state"), strings.TrimSpace(c.QueryParam("q"))
	matched := filterCircuits(all, appFilter, stateFilter, search)
	page, pages := pageOf(c.QueryParam("page"), len(matched))
	shown := matched[(page-1)*circuitsPerPage : min(page*circuitsPerPage, len(matched))]
	counts, err := s.Breakers.Counts(ctx, shown)
	if err != nil {
		return err
	}
	status, err := s.Status.Evaluator(ctx)
	if err != nil {
		return err
	}
	rates, err := s.Rates.Since(ctx, s.Now().Add(-time.Hour))
	if err != nil {
		return err
	}
	m := views.Circuits{
		Page:      s.page(c, "Circuits", "circuits"),
		Rows:      circuitRows(apps, shown, counts, sparks(rates, s.Now())),
		App:       appFilter,
		State:     stateFilter,
		CanCreate: scopeOf(c).ActsAnywhere(),
		Open:      countOff(matched),
		Search:    search,
		Matched:   len(matched),
		PageNo:    page,
		Pages:     pages,
		Status:    views.EvaluatorStatus{Leader: status.Leader, LastTickAt: status.LastTickAt, Rejected: status.Rejected, LastRejected: status.LastRejected},
	}
	for _, a := range apps {
		m.Apps = append(m.Apps, views.Option{Value: a.ID, Label: appName(apps, a.ID)})
	}
	for _, st := range circuit.States {
		m.States = append(m.States, views.Option{Value: st.String(), Label: st.String()})
	}
	q := url.Values{}
	if appFilter != "" {
		q.Set("app", appFilter)
	}
	if stateFilter != "" {
		q.Set("state", stateFilter)
	}
	if search != "" {
		q.Set("q", search)
	}
	m.PageBase = "/circuits?" + q.Encode()
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) > 0 {
		m.Query = "?" + q.Encode()
	}
	slices.SortStableFunc(m.Apps, func(a, b views.Option) int { return compareStrings(a.Label, b.Label) })
	if c.Request().Header.Get("HX-Request") == "true" {
		return render(c, http.StatusOK, views.CircuitsBody(m))
	}
	return render(c, http.StatusOK, views.CircuitsPage(m))
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// listFreshness is how old a list of circuits the pages that show many
// may use: each instance lists every second, so at 10,000 circuits a page
// reads no storage, and a change made on another instance shows within
// it (one made on this one, at once). Actions read afresh.
const listFreshness = 2 * time.Second

// circuitsPerPage bounds what one page of the circuit list renders.
const circuitsPerPage = 100

// pageOf reads the page asked for, kept within the pages there are.
func pageOf(raw string, n int) (page, pages int) {
	pages = max(1, (n+circuitsPerPage-1)/circuitsPerPage)
	page, err := strconv.Atoi(raw)
	if err != nil || page < 1 {
		page = 1
	}
	return min(page, pages), pages
}

// filterCircuits keeps the circuits of app in state whose function's name
// contains search (any case); empty filters keep all. Filtering happens
// here, not in a query: one listing serves every filter, and nothing typed
// reaches storage.
func filterCircuits(all []circuit.Circuit, app, state, search string) []circuit.Circuit {
	if app == "" && state == "" && search == "" {
		return all // no copy: at 10,000 circuits copying them cost more than reading them
	}
	var shown []circuit.Circuit
	search = strings.ToLower(search)
	for _, ci := range all {
		if (app == "" || ci.AppID == app) && (state == "" || ci.State.String() == state) && (search == "" || strings.Contains(strings.ToLower(ci.Function), search)) {
			shown = append(shown, ci)
		}
	}
	return shown
}

// countOff counts the circuits whose trigger is off.
func countOff(cs []circuit.Circuit) int {
	n := 0
	for _, c := range cs {
		if c.State.TriggerOff() {
			n++
		}
	}
	return n
}
