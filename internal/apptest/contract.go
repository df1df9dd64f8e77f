package apptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The API contract: every answer of /api/v1 and /ping in every test that
// starts a server here is checked against docs/openapi.yaml, read
// strictly. An undocumented route, status or field, or a field of the
// wrong type, fails the test that caused it.

var (
	contractOnce   sync.Once
	contractRouter routers.Router
	contractErr    error
)

// loadContract reads docs/openapi.yaml once per test binary, closing
// every object schema that does not say otherwise: the document must name
// each field an answer carries.
func loadContract() (routers.Router, error) {
	contractOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml")
		doc, err := openapi3.NewLoader().LoadFromFile(path)
		if err != nil {
			contractErr = fmt.Errorf("read %s: %w", path, err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			contractErr = fmt.Errorf("%s is not valid OpenAPI: %w", path, err)
			return
		}
		closeObjects(doc)
		doc.Servers = nil // any host: tests listen on free ports
		contractRouter, contractErr = legacy.NewRouter(doc)
	})
	return contractRouter, contractErr
}

func closeObjects(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(*openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if s.Type.Is("object") && len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			closed := false
			s.AdditionalProperties.Has = &closed
		}
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties.Schema)
		for _, l := range [][]*openapi3.SchemaRef{s.OneOf, s.AnyOf, s.AllOf} {
			for _, x := range l {
				walk(x)
			}
		}
	}
	for _, s := range doc.Components.Schemas {
		walk(s)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for _, mt := range r.Value.Content {
					walk(mt.Schema)
				}
			}
		}
	}
}

// contract checks answers and keeps what it finds for the test's end:
// handlers run on the server's goroutines.
type contract struct {
	router routers.Router

	mu       sync.Mutex
	problems []string
}

func newContract(t testing.TB) *contract {
	t.Helper()
	r, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	c := &contract{router: r}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range c.problems {
			t.Errorf("API contract (docs/openapi.yaml): %s", p)
		}
	})
	return c
}

func (c *contract) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/v1/") && !strings.HasPrefix(r.URL.Path, "/ping/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		if p := c.check(r, rec); p != "" {
			c.mu.Lock()
			c.problems = append(c.problems, p)
			c.mu.Unlock()
		}
	})
}

func (c *contract) check(r *http.Request, rec *teeWriter) string {
	req := r.Clone(context.Background())
	if req.Method == http.MethodHead || (strings.HasPrefix(r.URL.Path, "/ping/") && req.Method == http.MethodPost) {
		req.Method = http.MethodGet // the ping route documents GET and says HEAD and POST answer alike
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Sprintf("%s %s answered %d but is not documented (%v)", r.Method, r.URL.Path, rec.status, err)
	}
	body := rec.buf.Bytes()
	if r.Method == http.MethodHead {
		body = nil
	}
	if rec.Header().Get("Content-Encoding") == "gzip" && len(body) > 0 {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Sprintf("%s %s: gzip: %v", r.Method, r.URL.Path, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return fmt.Sprintf("%s %s: gzip: %v", r.Method, r.URL.Path, err)
		}
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 rec.status,
		Header:                 rec.Header(),
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: r.Method == http.MethodHead},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Sprintf("%s %s answered %d: %s\nbody: %.600s", r.Method, r.URL.Path, rec.status, brief(err), body)
	}
	return ""
}

// teeWriter passes the answer on and keeps a copy.
type teeWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// brief keeps what is wrong and where, without the schema and value dumps
// kin-openapi adds to each problem.
func brief(err error) string {
	var out []string
	dump := false
	for _, line := range strings.Split(err.Error(), "\n") {
		switch t := strings.TrimSpace(line); {
		case t == "Schema:" || t == "Value:":
			dump = true
		case dump && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") || t == ""):
		default:
			dump = false
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
