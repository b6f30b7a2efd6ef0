package localcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one component of the cluster run as a child process, its
// output kept in a log file of the run directory.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	// err is how the process ended; read it only after exited is closed.
	err error
}

// startProcess runs path with args and extra environment variables (on top
// of this process's), its output going to <dir>/<name>.log.
func startProcess(dir, name, path string, args, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, path, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop asks the process to end (SIGTERM), and kills its process group after
// grace. A process that already ended is left as it is.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	signalGroup(p.cmd.Process, syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	signalGroup(p.cmd.Process, syscall.SIGKILL)
	<-p.exited
}

// waitHealthy polls url until it answers 200, the process ends, or ctx is
// done; the error of the last two names the process and ends with the tail
// of its log.
func (p *process) waitHealthy(ctx context.Context, url string) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		// The components serve their health endpoints with self-signed
		// certificates made at start: there is nothing to verify against.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // a self-signed local endpoint
	}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.exited:
			how := "exit status 0"
			if p.err != nil {
				how = p.err.Error()
			}
			return fmt.Errorf("%s exited before it was healthy (%s); %s", p.name, how, p.logTail(20))
		case <-ctx.Done():
			return fmt.Errorf("%s was not healthy at %s in time (last: %s); %s", p.name, url, last, p.logTail(20))
		case <-tick.C:
		}
	}
}

// logTail is the last n lines of the process's log, introduced by its path.
func (p *process) logTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("its log %s cannot be read: %v", p.logPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("the end of its log %s:\n%s", p.logPath, strings.Join(lines, "\n"))
}

// residentBytes is the process's resident memory, read from /proc (Linux).
func (p *process) residentBytes() (int64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "status"))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		fields := strings.Fields(string(rest))
		if len(fields) != 2 || fields[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmRSS line in /proc/<pid>/status")
}

// freePort is a TCP port of the loopback address that nothing listens on
// now. Another process may take it before the component binds it; the
// component then fails to start and says so in its log.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("finding a free port: listener address %v is not TCP", l.Addr())
	}
	return addr.Port, nil
}
