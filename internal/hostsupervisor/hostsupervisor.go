// Package hostsupervisor makes the local switch stop a local function for real.
// Azure Functions Core Tools reads local.settings.json only when `func
// start` starts, so writing AzureWebJobs.<name>.Disabled into the file
// changes nothing in a running host. A Supervisor runs the host command
// and restarts it whenever the set of disabled functions in the file, or a
// host.json option set as a setting (AzureFunctionsJobHost__…, what a
// throttle lowers), changes: first gracefully (an interrupt, as Ctrl-C
// would send), then by force after a grace period, as Azure restarts an
// app whose settings change. Changes to other settings do not restart it.
package hostsupervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fusebox/fusebox/internal/switches/localsettings"
)

// Supervisor runs Command and restarts it when the Disabled keys or the
// host options of Settings change.
type Supervisor struct {
	Settings string   // the app's local.settings.json
	Command  []string // e.g. func start --port 7071
	Dir      string   // the command's directory; default: this process's
	// Poll is how often the file is read; default 1s.
	Poll time.Duration
	// Grace is how long a stopping host may take before it is killed;
	// default 10s.
	Grace          time.Duration
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
}

// Run supervises until ctx ends, then stops the host.
func (s *Supervisor) Run(ctx context.Context) error {
	if len(s.Command) == 0 {
		return errors.New("hostsupervisor: no command to run (fusebox local-host -settings FILE -- func start)")
	}
	if s.Poll <= 0 {
		s.Poll = time.Second
	}
	if s.Grace <= 0 {
		s.Grace = 10 * time.Second
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	last, err := Watched(s.Settings)
	if err != nil {
		return err
	}
	for {
		cmd, exited, err := s.start()
		if err != nil {
			return err
		}
		s.Logger.Info("host started", "pid", cmd.Process.Pid, "disabled", keys(last))
		changed, err := s.watch(ctx, last, exited)
		if err != nil {
			s.stop(cmd, exited)
			return err
		}
		if changed == nil { // ctx ended
			s.stop(cmd, exited)
			return nil
		}
		s.Logger.Info("disabled functions or host options changed: restarting the host", "from", keys(last), "to", keys(changed))
		s.stop(cmd, exited)
		last = changed
	}
}

func (s *Supervisor) start() (*exec.Cmd, chan error, error) {
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = s.Stdout, s.Stderr
	// Its own process group: the host's worker processes get the signal too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("hostsupervisor: start %s: %w", s.Command[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, exited, nil
}

// watch returns the new disabled set when it changes, nil when ctx ends.
// A host that exits on its own is an error: the supervisor does not hide a
// crash by restarting it.
func (s *Supervisor) watch(ctx context.Context, last map[string]string, exited chan error) (map[string]string, error) {
	tick := time.NewTicker(s.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil
		case err := <-exited:
			exited <- err // for stop
			return nil, fmt.Errorf("hostsupervisor: the host exited by itself: %v", err)
		case <-tick.C:
			now, err := Watched(s.Settings)
			if err != nil {
				s.Logger.Warn("local.settings.json does not read; the host keeps running", "error", err)
				continue
			}
			if !maps.Equal(now, last) {
				return now, nil
			}
		}
	}
}

// stop interrupts the host's process group, and kills it after Grace.
func (s *Supervisor) stop(cmd *exec.Cmd, exited chan error) {
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(s.Grace):
		s.Logger.Warn("the host did not stop in time: killing it", "grace", s.Grace)
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-exited
	}
}

// Watched is what a change of restarts the host: each disabled function
// (as "disabled <name>") and each host option set as a setting.
func Watched(path string) (map[string]string, error) {
	off, err := localsettings.DisabledFunctions(path)
	if err != nil {
		return nil, err
	}
	all, err := localsettings.Settings(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for f, v := range off {
		if v {
			out["disabled "+f] = "true"
		}
	}
	for k, v := range all {
		if strings.HasPrefix(k, "AzureFunctionsJobHost__") {
			out[k] = v
		}
	}
	return out, nil
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if strings.HasPrefix(k, "disabled ") {
			out = append(out, k)
			continue
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
