// Package mailtest runs a real SMTP server in-process (emersion/go-smtp)
// for tests: mail that Fusebox sends over the network lands here, parsed.
package mailtest

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one received mail.
type Message struct {
	From, To, Subject, MessageID string
	Text, HTML                   string
	At                           time.Time // when the server had it all
}

// Server is a running SMTP server.
type Server struct {
	Addr string
	Port int

	srv      *smtp.Server
	mu       sync.Mutex
	msgs     []Message
	arrived  chan struct{}
	password string // when set, PLAIN auth with any user name and this password is required
	refused  int    // authentications refused so far
	hold     *Hold  // the next matching message waits for its release
	reject   string // when set, every recipient is refused with this reply
}

// Hold is a message kept waiting in DATA: its client has sent it all and
// hears nothing back until Release, as with a server that stalls mid-send.
type Hold struct {
	subject  string
	arrived  chan int // the client's port, once the message is held
	released chan struct{}
	once     sync.Once
}

// Hold makes the next message whose subject contains subject wait, unanswered, until Release.
func (s *Server) Hold(subject string) *Hold {
	h := &Hold{subject: subject, arrived: make(chan int, 1), released: make(chan struct{})}
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
	return h
}

// Arrived waits up to timeout for the held message and returns the local
// port its client sent it from (to tell which process is sending).
func (h *Hold) Arrived(timeout time.Duration) (int, bool) {
	select {
	case p := <-h.arrived:
		return p, true
	case <-time.After(timeout):
		return 0, false
	}
}

// Release answers the held message (250): it is received.
func (h *Hold) Release() { h.once.Do(func() { close(h.released) }) }

// RequirePassword makes the server demand PLAIN authentication with
// password, as a server whose password was rotated does: a client with
// another gets 535.
func (s *Server) RequirePassword(password string) {
	s.mu.Lock()
	s.password = password
	s.mu.Unlock()
}

// RejectRecipients makes the server refuse every recipient for good with
// reply, as a server that knows no such mailbox does.
func (s *Server) RejectRecipients(reply string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reject = reply
}

// Refused counts the authentications refused with 535 so far.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Env is the configuration that makes Fusebox mail through this server.
func (s *Server) Env() map[string]string {
	return map[string]string{"FUSEBOX_SMTP_HOST": "127.0.0.1", "FUSEBOX_SMTP_PORT": strconv.Itoa(s.Port), "FUSEBOX_SMTP_TLS": "none", "FUSEBOX_MAIL_FROM": "fusebox@example.com"}
}

// Start listens on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, l)
}

// StartOn listens on addr (to bring a server "back up" where one was down).
func StartOn(t testing.TB, addr string) *Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, l)
}

// FreeAddr returns a loopback address nothing listens on yet.
func FreeAddr(t testing.TB) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String(), l.Addr().(*net.TCPAddr).Port
}

func serve(t testing.TB, l net.Listener) *Server {
	s := &Server{Addr: l.Addr().String(), Port: l.Addr().(*net.TCPAddr).Port, arrived: make(chan struct{}, 1000)}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		port := 0
		if a, ok := c.Conn().RemoteAddr().(*net.TCPAddr); ok {
			port = a.Port
		}
		return &session{s: s, port: port}, nil
	}))
	s.srv.Domain = "localhost"
	s.srv.AllowInsecureAuth = true
	s.srv.ReadTimeout, s.srv.WriteTimeout = 10*time.Second, 10*time.Second
	go s.srv.Serve(l)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Messages returns what arrived so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Wait blocks until at least n messages arrived or timeout passes.
func (s *Server) Wait(n int, timeout time.Duration) []Message {
	deadline := time.After(timeout)
	for {
		if msgs := s.Messages(); len(msgs) >= n {
			return msgs
		}
		select {
		case <-s.arrived:
		case <-deadline:
			return s.Messages()
		}
	}
}

// WaitFor blocks until a message that match accepts arrived (or had
// arrived), or timeout passes; it wakes on each arrival, never on a timer.
func (s *Server) WaitFor(match func(Message) bool, timeout time.Duration) (Message, bool) {
	deadline := time.After(timeout)
	for {
		for _, m := range s.Messages() {
			if match(m) {
				return m, true
			}
		}
		select {
		case <-s.arrived:
		case <-deadline:
			return Message{}, false
		}
	}
}

type session struct {
	s        *Server
	from, to string
	authed   bool
	port     int // the client's
}

func (x *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, _, password string) error {
		x.s.mu.Lock()
		defer x.s.mu.Unlock()
		if x.s.password != "" && password != x.s.password {
			x.s.refused++
			return smtp.ErrAuthFailed
		}
		x.authed = true
		return nil
	}), nil
}

func (x *session) Reset()        { x.from, x.to = "", "" }
func (x *session) Logout() error { return nil }
func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	x.s.mu.Lock()
	need := x.s.password != ""
	x.s.mu.Unlock()
	if need && !x.authed {
		return smtp.ErrAuthRequired
	}
	x.from = from
	return nil
}
func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	reject := x.s.reject
	x.s.mu.Unlock()
	if reject != "" {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: reject}
	}
	if x.to != "" {
		to = x.to + ", " + to // a mail to a list: every address, in order
	}
	x.to = to
	return nil
}
func (x *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := parse(raw)
	if err != nil {
		return err
	}
	x.s.mu.Lock()
	h := x.s.hold
	if h != nil && strings.Contains(m.Subject, h.subject) {
		x.s.hold = nil
	} else {
		h = nil
	}
	x.s.mu.Unlock()
	if h != nil {
		h.arrived <- x.port
		<-h.released
	}
	m.From, m.To, m.At = x.from, x.to, time.Now()
	x.s.mu.Lock()
	x.s.msgs = append(x.s.msgs, m)
	x.s.mu.Unlock()
	x.s.arrived <- struct{}{}
	return nil
}

func parse(raw []byte) (Message, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Message{}, err
	}
	dec := new(mime.WordDecoder)
	subject, _ := dec.DecodeHeader(msg.Header.Get("Subject"))
	m := Message{Subject: subject, MessageID: msg.Header.Get("Message-Id")}
	mediaType, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if !strings.HasPrefix(mediaType, "multipart/") {
		body, _ := io.ReadAll(msg.Body)
		m.Text = decode(body, msg.Header.Get("Content-Transfer-Encoding"))
		return m, nil
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		body, _ := io.ReadAll(p)
		text := decode(body, p.Header.Get("Content-Transfer-Encoding"))
		switch ct := p.Header.Get("Content-Type"); {
		case strings.HasPrefix(ct, "text/plain"):
			m.Text = text
		case strings.HasPrefix(ct, "text/html"):
			m.HTML = text
		}
	}
	return m, nil
}
