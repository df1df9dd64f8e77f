// Package bench holds Fusebox's performance benchmarks (P1 to P4 in
// docs/benchmarks.md). They run against the test Azurite and are not part
// of `go test`'s normal run: invoke them with -bench.
package bench
