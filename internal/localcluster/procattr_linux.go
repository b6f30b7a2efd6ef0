package localcluster

import (
	"os"
	"syscall"
)

// sysProcAttr puts a component in a process group of its own, so that stop
// reaches whatever it started, and kills it when the test process dies
// without stopping the cluster (a killed `go test`), so no component
// outlives the run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func signalGroup(p *os.Process, sig syscall.Signal) {
	// The negative pid signals the whole group.
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		_ = p.Signal(sig)
	}
}
