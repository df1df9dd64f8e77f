package web

import (
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/fusebox/fusebox/internal/bounded"
)

// keyedLimiter is a token bucket per key (a client address, a verified
// app) in bounded memory: keys come from requests, so a flood of distinct
// ones must not grow the map. When it holds max keys, those idle for idle
// are forgotten; if it is still full, new keys share one overflow bucket,
// so a flood of fresh addresses limits itself and not the known keys.
type keyedLimiter struct {
	rate  rate.Limit
	burst int
	max   int
	idle  time.Duration

	mu       sync.Mutex
	buckets  map[string]*bucket
	overflow *rate.Limiter
	room     bounded.Room
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// maxLimiterKeys bounds every keyedLimiter: about 200 bytes a key.
const maxLimiterKeys = 10_000

func newKeyedLimiter(perSecond float64, burst int) *keyedLimiter {
	return &keyedLimiter{rate: rate.Limit(perSecond), burst: max(burst, 1), max: maxLimiterKeys, idle: 5 * time.Minute,
		buckets: map[string]*bucket{}, overflow: rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))}
}

// allow takes a token from key's bucket, and says whether there was one.
func (l *keyedLimiter) allow(key string) bool {
	now := time.Now()
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok {
		if !bounded.Make(&l.room, l.buckets, l.max, now, func(old *bucket) bool { return now.Sub(old.seen) > l.idle }) {
			l.mu.Unlock()
			return l.overflow.AllowN(now, 1)
		}
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	l.mu.Unlock()
	return b.lim.AllowN(now, 1)
}

// tooMany answers 429 in plain text with Retry-After.
func tooMany(c echo.Context, message string) error {
	c.Response().Header().Set("Retry-After", "1")
	return c.String(http.StatusTooManyRequests, message)
}

// machineLimit is a per-key token bucket for machine APIs: rate per second,
// bursts of ten times that, 429 in plain text with Retry-After when empty.
func machineLimit(perSecond float64, key func(echo.Context) string, message string) echo.MiddlewareFunc {
	l := newKeyedLimiter(perSecond, int(perSecond*10))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !l.allow(key(c)) {
				return tooMany(c, message)
			}
			return next(c)
		}
	}
}

// logSampler lets a line through once per key per period and counts the
// ones it held back, in bounded memory: under a flood of refusals the log
// says so once a minute per client instead of once per request.
type logSampler struct {
	period time.Duration
	max    int

	mu   sync.Mutex
	seen map[string]*sampled
	room bounded.Room
}

type sampled struct {
	next       time.Time
	suppressed int
}

func newLogSampler(period time.Duration) *logSampler {
	return &logSampler{period: period, max: maxLimiterKeys, seen: map[string]*sampled{}}
}

// allow says whether to log key's line now, and how many were held back
// since the last one logged.
func (s *logSampler) allow(key string) (bool, int) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.seen[key]
	if ok && now.Before(e.next) {
		e.suppressed++
		return false, 0
	}
	if !ok {
		if !bounded.Make(&s.room, s.seen, s.max, now, func(old *sampled) bool { return now.After(old.next) }) {
			return false, 0 // full of live keys: hold this one back too
		}
		e = &sampled{}
		s.seen[key] = e
	}
	held := e.suppressed
	e.next, e.suppressed = now.Add(s.period), 0
	return true, held
}
