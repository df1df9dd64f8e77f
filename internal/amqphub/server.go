// Package amqphub is a minimal AMQP 1.0 endpoint that answers the two
// management reads of Azure Event Hubs — a hub's properties and a
// partition's — for a simulated hub. It stands in for an Event Hubs
// namespace, which cannot be reached from here, in `make run` and in
// tests, so that Fusebox's real azeventhubs client is what reads it.
//
// It is not a broker: it accepts no events, and delivers only what a
// partition's description implies (see Partition.EnqueuedAt). What it
// copies from the service, and from where:
//   - SASL ANONYMOUS, then a put-token on the $cbs node, as the Event Hubs
//     clients do (azeventhubs internal/cbs.go, NegotiateClaim); any token
//     is accepted;
//   - request/response on $management: application properties
//     operation=READ, type com.microsoft:eventhub or com.microsoft:partition,
//     name and partition; the answer carries status-code and
//     status-description and a map body with the keys azeventhubs reads
//     (mgmt.go: newEventHubProperties, newPartitionProperties), correlated
//     by the request's message-id;
//   - a receiver on <hub>/ConsumerGroups/<group>/Partitions/<id> with the
//     selector filter azeventhubs sends for a sequence-number start
//     (partition_client.go: getStartExpression, "amqp.annotation.x-opt-
//     sequence-number > 'N'"), served as far as the peer grants credit:
//     each event settled, with the x-opt-sequence-number, x-opt-offset and
//     x-opt-enqueued-time annotations (event_data.go) and a data section;
//     a start before the first retained event begins at that one, as the
//     service does;
//   - plain AMQP on a local port, as the Event Hubs emulator serves it to
//     a connection string with UseDevelopmentEmulator=true.
package amqphub

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Partition is what Event Hubs says of one partition.
type Partition struct {
	First, Last  int64 // first retained and last enqueued sequence numbers
	LastOffset   string
	LastEnqueued time.Time
	Empty        bool
	// FirstEnqueued is when event First arrived; zero: as LastEnqueued.
	FirstEnqueued time.Time
}

// EnqueuedAt is when event seq arrived, for a partition whose events
// arrived evenly between First and Last (the fixture's only model).
func (p Partition) EnqueuedAt(seq int64) time.Time {
	if p.FirstEnqueued.IsZero() || p.Last <= p.First {
		return p.LastEnqueued
	}
	span := p.LastEnqueued.Sub(p.FirstEnqueued)
	return p.FirstEnqueued.Add(time.Duration(float64(span) * float64(seq-p.First) / float64(p.Last-p.First)))
}

// Hub answers for the event hubs of one namespace.
type Hub interface {
	// Partitions lists a hub's partition ids; false: no such hub.
	Partitions(hub string) ([]string, bool)
	// Partition describes one partition; false: no such partition. It may
	// take as long as it likes: the connection carries on meanwhile.
	Partition(ctx context.Context, hub, id string) (Partition, bool)
}

// Server serves Hub over AMQP.
type Server struct {
	Hub    Hub
	Logger *slog.Logger
}

// maxFrame bounds a frame the peer sends; management requests are a few
// hundred bytes.
const maxFrame = 1 << 20

// Start listens on addr and serves in the background; stop closes the
// listener.
func (s *Server) Start(addr string) (listening string, stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	go func() { _ = s.Serve(l) }()
	return l.Addr().String(), func() { l.Close() }, nil
}

// ConnectionString is the Event Hubs connection string of a namespace
// served at addr, in the form the Event Hubs emulator's take: plain AMQP,
// and a key nobody checks.
func ConnectionString(addr string) string {
	return "Endpoint=sb://" + addr + ";SharedAccessKeyName=fusebox;SharedAccessKey=bm90LWNoZWNrZWQ=;UseDevelopmentEmulator=true"
}

// Serve accepts connections on l until it is closed.
func (s *Server) Serve(l net.Listener) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go func() {
			cn := &conn{srv: s, c: c, r: bufio.NewReader(c), sessions: map[uint16]*session{}}
			if err := cn.run(ctx); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && s.Logger != nil {
				s.Logger.Warn("amqphub: connection ended", "error", err)
			}
		}()
	}
}

type conn struct {
	srv      *Server
	c        net.Conn
	r        *bufio.Reader
	wmu      sync.Mutex
	smu      sync.Mutex
	sessions map[uint16]*session
}

type session struct {
	channel      uint16
	nextIncoming uint32 // the peer's next transfer id
	nextOutgoing uint32
	nextDelivery uint32
	nextHandle   uint32
	links        map[uint32]*link // by the peer's handle
}

type link struct {
	ours    uint32
	sender  bool   // the peer sends on it (requests)
	address string // the node: $cbs or $management
	reply   string // for the peer's receivers: the address replies go to
	payload []byte // a message split over several transfers
	// deliveries counts the peer's deliveries on a link it sends on, from
	// its initial delivery-count: credit is topped up as they arrive.
	deliveries uint32
	// events is set on a receiver of a partition's events.
	events *eventCursor
}

// eventCursor is where a partition receiver stands.
type eventCursor struct {
	hub, partition string
	next           int64 // the next sequence number to deliver
	sent           uint32
}

// maxBatch bounds the events sent for one grant of credit.
const maxBatch = 100

// credit is what the peer may send on a link before it hears again.
const credit = 1000

var (
	headerSASL = []byte("AMQP\x03\x01\x00\x00")
	headerAMQP = []byte("AMQP\x00\x01\x00\x00")
)

// Performative and section descriptors.
const (
	descOpen           = 0x10
	descBegin          = 0x11
	descAttach         = 0x12
	descFlow           = 0x13
	descTransfer       = 0x14
	descDisposition    = 0x15
	descDetach         = 0x16
	descEnd            = 0x17
	descClose          = 0x18
	descSource         = 0x28
	descTarget         = 0x29
	descAccepted       = 0x24
	descSASLMechanisms = 0x40
	descSASLInit       = 0x41
	descSASLOutcome    = 0x44
	descProperties     = 0x73
	descError          = 0x1d
	descAnnotations    = 0x72
	descAppProperties  = 0x74
	descData           = 0x75
	descValue          = 0x77
)

func (cn *conn) run(ctx context.Context) error {
	defer cn.c.Close()
	stop := context.AfterFunc(ctx, func() { cn.c.Close() })
	defer stop()
	hdr, err := cn.header()
	if err != nil {
		return err
	}
	if string(hdr) == string(headerSASL) {
		if err := cn.sasl(); err != nil {
			return err
		}
		if hdr, err = cn.header(); err != nil {
			return err
		}
	}
	if string(hdr) != string(headerAMQP) {
		_, _ = cn.c.Write(headerAMQP)
		return fmt.Errorf("amqphub: unsupported protocol header %q", hdr)
	}
	if _, err := cn.c.Write(headerAMQP); err != nil {
		return err
	}
	beat := make(chan struct{})
	defer close(beat)
	for {
		code, fields, payload, ch, err := cn.frame()
		if err != nil {
			return err
		}
		switch code {
		case -1: // heartbeat
		case descOpen:
			if err := cn.send(0, 0, described{descOpen, list{"fusebox-amqphub", nil, uint32(65536), ushort(65535)}}, nil); err != nil {
				return err
			}
			// The peer asks for a frame at least this often.
			if idle := fieldUint(fields, 4); idle > 0 {
				go cn.heartbeat(time.Duration(idle)*time.Millisecond/2, beat)
			}
		case descBegin:
			cn.smu.Lock()
			cn.sessions[ch] = &session{channel: ch, nextIncoming: fieldUint(fields, 1), links: map[uint32]*link{}}
			cn.smu.Unlock()
			if err := cn.send(0, ch, described{descBegin, list{ushort(ch), uint32(0), uint32(65535), uint32(65535), uint32(255)}}, nil); err != nil {
				return err
			}
		case descAttach:
			if err := cn.attach(ch, fields); err != nil {
				return err
			}
		case descTransfer:
			if err := cn.transfer(ctx, ch, fields, payload); err != nil {
				return err
			}
		case descDetach:
			s := cn.session(ch)
			if s == nil {
				return fmt.Errorf("amqphub: detach on channel %d, which has no session", ch)
			}
			cn.smu.Lock()
			l := s.links[fieldUint(fields, 0)]
			delete(s.links, fieldUint(fields, 0))
			cn.smu.Unlock()
			if l != nil {
				if err := cn.send(0, ch, described{descDetach, list{l.ours, true}}, nil); err != nil {
					return err
				}
			}
		case descEnd:
			cn.smu.Lock()
			delete(cn.sessions, ch)
			cn.smu.Unlock()
			if err := cn.send(0, ch, described{descEnd, list{}}, nil); err != nil {
				return err
			}
		case descClose:
			_ = cn.send(0, 0, described{descClose, list{}}, nil)
			return nil
		case descFlow:
			// Credit the peer grants: replies are few and need none
			// tracked; a partition receiver is sent what it asks for.
			if err := cn.flow(ctx, ch, fields); err != nil {
				return err
			}
		case descDisposition:
			// Everything is sent settled: nothing to track.
		default:
			return fmt.Errorf("amqphub: unexpected performative 0x%02x", code)
		}
	}
}

func (cn *conn) heartbeat(every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			cn.wmu.Lock()
			_, err := cn.c.Write([]byte{0, 0, 0, 8, 2, 0, 0, 0})
			cn.wmu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

func (cn *conn) header() ([]byte, error) {
	hdr := make([]byte, 8)
	_, err := io.ReadFull(cn.r, hdr)
	return hdr, err
}

// sasl accepts any mechanism the peer picks from ANONYMOUS and PLAIN.
func (cn *conn) sasl() error {
	if _, err := cn.c.Write(headerSASL); err != nil {
		return err
	}
	if err := cn.send(1, 0, described{descSASLMechanisms, list{symArray{"ANONYMOUS", "PLAIN"}}}, nil); err != nil {
		return err
	}
	code, _, _, _, err := cn.frame()
	if err != nil {
		return err
	}
	if code != descSASLInit {
		return fmt.Errorf("amqphub: expected sasl-init, got 0x%02x", code)
	}
	return cn.send(1, 0, described{descSASLOutcome, list{ubyte(0)}}, nil)
}

// frame reads one frame: its performative's descriptor (-1 for an empty
// frame), fields and payload, and its channel.
func (cn *conn) frame() (int, list, []byte, uint16, error) {
	head := make([]byte, 8)
	if _, err := io.ReadFull(cn.r, head); err != nil {
		return 0, nil, nil, 0, err
	}
	size := binary.BigEndian.Uint32(head)
	doff := int(head[4]) * 4
	if size < 8 || size > maxFrame || doff < 8 || doff > int(size) {
		return 0, nil, nil, 0, fmt.Errorf("amqphub: a frame of %d bytes with data offset %d", size, doff)
	}
	ch := binary.BigEndian.Uint16(head[6:])
	body := make([]byte, size-8)
	if _, err := io.ReadFull(cn.r, body); err != nil {
		return 0, nil, nil, 0, err
	}
	body = body[doff-8:]
	if len(body) == 0 {
		return -1, nil, nil, ch, nil
	}
	d := &decoder{b: body}
	v, err := d.value()
	if err != nil {
		return 0, nil, nil, 0, err
	}
	p, ok := v.(described)
	if !ok {
		return 0, nil, nil, 0, fmt.Errorf("amqphub: a frame whose body is %T, not a performative", v)
	}
	fields, _ := p.value.(list)
	return int(p.code), fields, body[d.i:], ch, nil
}

func (cn *conn) send(typ byte, ch uint16, perf described, payload []byte) error {
	e := &encoder{b: []byte{0, 0, 0, 0, 2, typ, byte(ch >> 8), byte(ch)}}
	e.value(perf)
	e.b = append(e.b, payload...)
	binary.BigEndian.PutUint32(e.b, uint32(len(e.b)))
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	_ = cn.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := cn.c.Write(e.b)
	return err
}

func (cn *conn) session(ch uint16) *session {
	cn.smu.Lock()
	defer cn.smu.Unlock()
	return cn.sessions[ch]
}

func address(terminus any) string {
	if d, ok := terminus.(described); ok {
		if l, ok := d.value.(list); ok {
			return fieldString(l, 0)
		}
	}
	return ""
}

func (cn *conn) attach(ch uint16, f list) error {
	s := cn.session(ch)
	if s == nil {
		return fmt.Errorf("amqphub: attach on channel %d, which has no session", ch)
	}
	receiver, _ := field(f, 2).(bool) // the peer's role: true is receiver
	src, tgt := address(field(f, 5)), address(field(f, 6))
	cn.smu.Lock()
	l := &link{ours: s.nextHandle, sender: !receiver, deliveries: fieldUint(f, 9)}
	s.nextHandle++
	if l.sender {
		l.address = tgt
	} else {
		l.address, l.reply = src, tgt
		l.events = cursorOf(src, field(f, 5))
	}
	s.links[fieldUint(f, 1)] = l
	incoming, outgoing := s.nextIncoming, s.nextOutgoing
	cn.smu.Unlock()
	source, target := described{descSource, list{src}}, described{descTarget, list{tgt}}
	if l.sender {
		if err := cn.send(0, ch, described{descAttach, list{field(f, 0), l.ours, true, field(f, 3), field(f, 4), source, target}}, nil); err != nil {
			return err
		}
		// Credit for the peer's requests.
		return cn.send(0, ch, described{descFlow, list{incoming, uint32(65535), outgoing, uint32(65535), l.ours, l.deliveries, uint32(credit)}}, nil)
	}
	if l.events != nil {
		if _, ok := cn.srv.Hub.Partition(context.Background(), l.events.hub, l.events.partition); !ok {
			// As the service refuses a receiver of an entity it has not:
			// an attach without a source, then a detach that says why.
			cn.smu.Lock()
			delete(s.links, fieldUint(f, 1))
			cn.smu.Unlock()
			if err := cn.send(0, ch, described{descAttach, list{field(f, 0), l.ours, false, field(f, 3), field(f, 4), nil, nil, nil, false, uint32(0)}}, nil); err != nil {
				return err
			}
			why := fmt.Sprintf("The messaging entity '%s/Partitions/%s' could not be found.", l.events.hub, l.events.partition)
			return cn.send(0, ch, described{descDetach, list{l.ours, true, described{descError, list{symbol("amqp:not-found"), why}}}}, nil)
		}
	}
	return cn.send(0, ch, described{descAttach, list{field(f, 0), l.ours, false, field(f, 3), field(f, 4), source, target, nil, false, uint32(0)}}, nil)
}

func (cn *conn) transfer(ctx context.Context, ch uint16, f list, payload []byte) error {
	s := cn.session(ch)
	if s == nil {
		return fmt.Errorf("amqphub: transfer on channel %d, which has no session", ch)
	}
	cn.smu.Lock()
	s.nextIncoming++
	l := s.links[fieldUint(f, 0)]
	cn.smu.Unlock()
	if l == nil || !l.sender {
		return fmt.Errorf("amqphub: transfer on handle %d, which is not a link the peer sends on", fieldUint(f, 0))
	}
	l.payload = append(l.payload, payload...)
	if more, _ := field(f, 5).(bool); more {
		if len(l.payload) > maxFrame {
			return errors.New("amqphub: a request larger than 1 MiB")
		}
		return nil
	}
	msg := l.payload
	l.payload = nil
	cn.smu.Lock()
	l.deliveries++
	topUp := l.deliveries%(credit/2) == 0
	incoming, outgoing, count := s.nextIncoming, s.nextOutgoing, l.deliveries
	cn.smu.Unlock()
	if topUp {
		// Before the peer runs out of link credit or session window: both
		// are granted again in full.
		if err := cn.send(0, ch, described{descFlow, list{incoming, uint32(65535), outgoing, uint32(65535), l.ours, count, uint32(credit)}}, nil); err != nil {
			return err
		}
	}
	if settled, _ := field(f, 4).(bool); !settled {
		if err := cn.send(0, ch, described{descDisposition, list{true, fieldUint(f, 1), nil, true, described{descAccepted, list{}}}}, nil); err != nil {
			return err
		}
	}
	req, err := parseRequest(msg)
	if err != nil {
		return err
	}
	// A slow answer must not hold up the connection's other links.
	go func() {
		status, desc, body := cn.answer(ctx, l.address, req)
		if err := cn.reply(s, req, status, desc, body); err != nil && cn.srv.Logger != nil {
			cn.srv.Logger.Warn("amqphub: reply", "error", err)
		}
	}()
	return nil
}

// cursorOf reads a partition receiver's source: its address and the
// sequence number its selector filter starts after (or at); nil for any
// other link, or a start other than a sequence number, which this fixture
// does not serve.
func cursorOf(address string, source any) *eventCursor {
	parts := strings.Split(address, "/")
	if len(parts) != 5 || !strings.EqualFold(parts[1], "ConsumerGroups") || !strings.EqualFold(parts[3], "Partitions") {
		return nil
	}
	d, _ := source.(described)
	l, _ := d.value.(list)
	filters, _ := field(l, 7).(mapVal)
	for _, p := range filters {
		sel, _ := p.value.(described)
		expr, _ := sel.value.(string)
		rest, ok := strings.CutPrefix(expr, "amqp.annotation.x-opt-sequence-number ")
		if !ok {
			continue
		}
		op, num, _ := strings.Cut(rest, " ")
		n, err := strconv.ParseInt(strings.Trim(num, "'"), 10, 64)
		if err != nil || (op != ">" && op != ">=") {
			return nil
		}
		if op == ">" {
			n++
		}
		return &eventCursor{hub: parts[0], partition: parts[4], next: n}
	}
	return nil
}

// flow sends a partition receiver the events its credit asks for, as far
// as the partition has them.
func (cn *conn) flow(ctx context.Context, ch uint16, f list) error {
	s := cn.session(ch)
	if s == nil || field(f, 4) == nil {
		return nil
	}
	cn.smu.Lock()
	l := s.links[fieldUint(f, 4)] // the peer's handle
	cn.smu.Unlock()
	if l == nil || l.events == nil {
		return nil
	}
	// Credit counts from the delivery-count the peer has seen.
	credit := int64(fieldUint(f, 5)) + int64(fieldUint(f, 6)) - int64(l.events.sent)
	p, ok := cn.srv.Hub.Partition(ctx, l.events.hub, l.events.partition)
	if !ok || p.Empty {
		return nil
	}
	l.events.next = max(l.events.next, p.First)
	for n := int64(0); n < min(credit, maxBatch) && l.events.next <= p.Last; n++ {
		if err := cn.deliver(s, l, p, l.events.next); err != nil {
			return err
		}
		l.events.next++
		l.events.sent++
	}
	return nil
}

// deliver sends event seq, settled.
func (cn *conn) deliver(s *session, l *link, p Partition, seq int64) error {
	cn.smu.Lock()
	delivery := s.nextDelivery
	s.nextDelivery++
	s.nextOutgoing++
	cn.smu.Unlock()
	e := &encoder{}
	e.value(described{descAnnotations, mapVal{
		{symbol("x-opt-sequence-number"), seq},
		{symbol("x-opt-offset"), strconv.FormatInt(seq*256, 10)},
		{symbol("x-opt-enqueued-time"), p.EnqueuedAt(seq).UTC()},
	}})
	e.value(described{descData, binaryVal(fmt.Appendf(nil, `{"sequence":%d}`, seq))})
	tag := binary.BigEndian.AppendUint32(nil, delivery)
	return cn.send(0, s.channel, described{descTransfer, list{l.ours, delivery, binaryVal(tag), uint32(0), true}}, e.b)
}

type request struct {
	id    any // message-id, echoed as correlation-id
	reply string
	props mapVal
}

func (r request) prop(key string) string {
	v, _ := r.props.get(key)
	switch s := v.(type) {
	case string:
		return s
	case symbol:
		return string(s)
	}
	return ""
}

func parseRequest(msg []byte) (request, error) {
	var r request
	d := &decoder{b: msg}
	for d.i < len(d.b) {
		v, err := d.value()
		if err != nil {
			return r, fmt.Errorf("amqphub: a request that does not decode: %w", err)
		}
		sec, ok := v.(described)
		if !ok {
			return r, errors.New("amqphub: a request section that is not described")
		}
		switch sec.code {
		case descProperties:
			p, _ := sec.value.(list)
			r.id, r.reply = field(p, 0), fieldString(p, 4)
		case descAppProperties:
			r.props, _ = sec.value.(mapVal)
		}
	}
	return r, nil
}

func (cn *conn) answer(ctx context.Context, node string, r request) (int32, string, any) {
	switch node {
	case "$cbs":
		return 202, "Accepted", nil
	case "$management":
	default:
		return 404, fmt.Sprintf("there is no node %q here", node), nil
	}
	hub, kind := r.prop("name"), r.prop("type")
	if r.prop("operation") != "READ" {
		return 400, fmt.Sprintf("operation %q is not supported", r.prop("operation")), nil
	}
	ids, ok := cn.srv.Hub.Partitions(hub)
	if !ok {
		return 404, fmt.Sprintf("The messaging entity '%s' could not be found.", hub), nil
	}
	switch kind {
	case "com.microsoft:eventhub":
		return 200, "OK", mapVal{{"name", hub}, {"type", kind}, {"created_at", time.Unix(0, 0).UTC()},
			{"partition_count", int32(len(ids))}, {"partition_ids", strArray(ids)}, {"georeplication_factor", int32(1)}}
	case "com.microsoft:partition":
		id := r.prop("partition")
		p, ok := cn.srv.Hub.Partition(ctx, hub, id)
		if !ok {
			return 404, fmt.Sprintf("Partition '%s' of '%s' could not be found.", id, hub), nil
		}
		return 200, "OK", mapVal{{"name", hub}, {"type", kind}, {"partition", id},
			{"begin_sequence_number", p.First}, {"last_enqueued_sequence_number", p.Last}, {"last_enqueued_offset", p.LastOffset},
			{"last_enqueued_time_utc", p.LastEnqueued.UTC()}, {"is_partition_empty", p.Empty}}
	}
	return 400, fmt.Sprintf("type %q is not supported", kind), nil
}

// reply sends the answer on the session's link that receives at the
// request's reply-to address.
func (cn *conn) reply(s *session, r request, status int32, desc string, body any) error {
	cn.smu.Lock()
	var to *link
	for _, l := range s.links {
		if !l.sender && (l.reply == r.reply || to == nil) {
			to = l
		}
	}
	if to == nil {
		cn.smu.Unlock()
		return fmt.Errorf("amqphub: no link receives replies at %q", r.reply)
	}
	delivery := s.nextDelivery
	s.nextDelivery++
	s.nextOutgoing++
	cn.smu.Unlock()
	e := &encoder{}
	e.value(described{descProperties, list{nil, nil, nil, nil, nil, r.id}})
	e.value(described{descAppProperties, mapVal{{"status-code", status}, {"status-description", desc}}})
	e.value(described{descValue, body})
	tag := binary.BigEndian.AppendUint32(nil, delivery)
	return cn.send(0, s.channel, described{descTransfer, list{to.ours, delivery, binaryVal(tag), uint32(0), true}}, e.b)
}
