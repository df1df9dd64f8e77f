# The two commands a newcomer needs are `make run` and `make test`.
.PHONY: run test bench screenshots build generate vendor clean

run: ## run Fusebox locally with Azurite, maildev and demo data
	@scripts/dev.sh

test: ## install what the tests need and run every check and test
	@scripts/test.sh

bench: ## measure P1–P6 against fresh Azurites, three runs each (docs/benchmarks.md)
	@scripts/bench.sh

screenshots: ## the overview, circuit, resume and episode pages and the trip mail at desktop and phone width, into docs/screenshots
	@scripts/screenshots.sh

build: ## build bin/fusebox, stamped with the version and commit (fusebox version)
	go build -ldflags "$$(scripts/ldflags.sh)" -o bin/fusebox ./cmd/web

generate: ## regenerate templ output after editing .templ files
	go tool templ generate -path internal/views

vendor: ## copy the pinned htmx build from node_modules into static/
	cp node_modules/htmx.org/dist/htmx.min.js static/js/htmx.min.js

clean: ## remove local data and builds
	rm -rf .dev bin
