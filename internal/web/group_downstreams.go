package web

import (
	"github.com/fusebox/fusebox/internal/errortexts"
)

// DownstreamPages name the dependencies many functions call, and trip,
// try and resume their members together (pages and API).
type DownstreamPages struct {
	*core
	Downstreams downstreamStore
	Keeper      downstreamKeeper
	Audit       auditAppender
	// What a downstream's page and its members' rows read.
	Apps     appReader
	Circuits circuitLister
	Counter  circuitCounter
	Channels channelChecker
	// Samples and Calls propose downstreams from what failed together;
	// Calls nil proposes from error texts alone.
	Samples errortexts.Grouper
	Calls   arrivalReader
	// History forecasts a member's pause window; nil forecasts none.
	History checkpointHistory
}
