package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fusebox/fusebox/internal/apptest"
)

// Every route of the API and the ping API is in docs/openapi.yaml, with
// each method it answers; apptest checks every answer in every test
// against it (apptest/contract.go).
func TestEveryAPIRouteIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv := apptest.Start(t, nil)
	param := regexp.MustCompile(`:([a-z]+)`)
	checked := 0
	for _, r := range srv.App.Web.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") && !strings.HasPrefix(r.Path, "/ping/") {
			continue
		}
		if strings.HasSuffix(r.Path, "/*") {
			continue // echo's "no such route" for the group
		}
		if r.Method == http.MethodHead || (strings.HasPrefix(r.Path, "/ping/") && r.Method == http.MethodPost) {
			continue // the ping routes document GET and say HEAD and POST answer alike
		}
		path := param.ReplaceAllString(r.Path, "{$1}")
		path = strings.NewReplacer("/ping/{a}/{b}/{c}", "/ping/{key}/{slug}/{action}", "/ping/{a}/{b}", "/ping/{id}/{action}", "/ping/{a}", "/ping/{id}").Replace(path)
		item := doc.Paths.Find(path)
		if item == nil || item.GetOperation(r.Method) == nil {
			t.Errorf("%s %s (as %s) is not in docs/openapi.yaml", r.Method, r.Path, path)
		}
		checked++
	}
	if checked < 25 {
		t.Errorf("only %d API routes found: the route list is not the server's", checked)
	}
}
