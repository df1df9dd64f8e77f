// Package e2e holds Fusebox's browser tests: the real server on Azurite,
// driven by headless Debian Chromium through chromedp. The tests are in
// the _test files; this file documents the package for go vet and godoc.
package e2e
