// Package static embeds Fusebox's stylesheets and scripts and serves them
// under content-hashed URLs, so browsers may cache them for a year and still
// see a new version the moment it ships.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed css js img
var files embed.FS

// Assets knows each file's content hash.
type Assets struct {
	hashes map[string]string // "css/app.css" -> first 12 hex digits of SHA-256
}

// Load hashes every embedded file once, at start-up.
func Load() (*Assets, error) {
	a := &Assets{hashes: map[string]string{}}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		a.hashes[p] = hex.EncodeToString(sum[:])[:12]
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("static: %w", err)
	}
	return a, nil
}

// Prefix is where assets are served.
const Prefix = "/static/"

// URL returns the cache-busted URL of an asset such as "css/app.css".
// An unknown name is a programming error and panics in tests and at start-up
// rendering rather than shipping a broken link.
func (a *Assets) URL(name string) string {
	h, ok := a.hashes[name]
	if !ok {
		panic(fmt.Sprintf("static: no asset %q", name))
	}
	return Prefix + name + "?v=" + h
}

// Handler serves the assets. A request carrying the current hash may be
// cached forever; any other is revalidated.
func (a *Assets) Handler() http.Handler {
	fileServer := http.StripPrefix(Prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean(r.URL.Path), Prefix)
		h, ok := a.hashes[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("v") == h {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		fileServer.ServeHTTP(w, r)
	})
}
