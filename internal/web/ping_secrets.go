package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"sync"
	"time"
)

// pingSecrets remembers, per job, a hash of the ping token its row held
// when last read, so that a token naming a real job (whose id every viewer
// sees) with a wrong secret is refused before any storage read. A
// mismatch reads the job again at most once per recheck, for a token
// rotated on another instance. Only jobs that exist are remembered, at
// most maxPingSecrets of them, each about 100 bytes.
type pingSecrets struct {
	mu   sync.Mutex
	jobs map[string]pingSecret
}

type pingSecret struct {
	hash   [32]byte
	readAt time.Time
}

const (
	maxPingSecrets = 100_000
	pingRecheck    = 10 * time.Second
)

// verdict is what the remembered secret says of token for job id: known
// false when nothing is remembered, or when a mismatch may read the job
// again now (then match is false too).
func (p *pingSecrets) verdict(id, token string, now time.Time) (known, match bool) {
	h := sha256.Sum256([]byte(token))
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.jobs[id]
	if !ok {
		return false, false
	}
	if subtle.ConstantTimeCompare(s.hash[:], h[:]) == 1 {
		return true, true
	}
	if now.Sub(s.readAt) >= pingRecheck {
		s.readAt = now // one read for this recheck, however many come
		p.jobs[id] = s
		return false, false
	}
	return true, false
}

// remember keeps the token job id's row holds, as read at now.
func (p *pingSecrets) remember(id, token string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.jobs == nil || len(p.jobs) >= maxPingSecrets {
		p.jobs = map[string]pingSecret{}
	}
	p.jobs[id] = pingSecret{hash: sha256.Sum256([]byte(token)), readAt: now}
}
