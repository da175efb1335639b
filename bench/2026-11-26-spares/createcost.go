//go:build ignore

// createcost: CPU time of creating, writing, fdatasyncing, rewriting and
// unlinking 1,000 files of 100 KiB in the directory given (one thread,
// CLOCK_THREAD_CPUTIME_ID). go run createcost.go /var/tmp/somedir

package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func cpu() time.Duration {
	var t unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t)
	return time.Duration(t.Nano())
}

// writeFile opens name with flag, writes buf, fdatasyncs and closes it,
// and returns the CPU time of the open, the write and the fdatasync.
func writeFile(name string, flag int, buf []byte) (open, write, sync time.Duration) {
	a := cpu()
	fd, err := unix.Open(name, flag|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	b := cpu()
	if err != nil {
		panic(err)
	}
	unix.Write(fd, buf)
	c := cpu()
	unix.Fdatasync(fd)
	d := cpu()
	unix.Close(fd)
	return b - a, c - b, d - c
}

func main() {
	runtime.LockOSThread()
	dir := os.Args[1]
	os.MkdirAll(dir, 0o755)
	buf := make([]byte, 100<<10)
	const n = 1000
	per := func(d time.Duration) time.Duration { return d / n }
	for _, pass := range []struct {
		name string
		flag int
	}{{"new file", unix.O_CREAT}, {"overwrite", 0}} {
		var cOpen, cWrite, cSync, cTmp time.Duration
		for i := 0; i < n; i++ {
			o, w, s := writeFile(dir+"/f"+strconv.Itoa(i), pass.flag, buf)
			cOpen, cWrite, cSync = cOpen+o, cWrite+w, cSync+s
			if pass.flag&unix.O_CREAT != 0 {
				a := cpu()
				fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
				cTmp += cpu() - a
				if err != nil {
					panic(err)
				}
				unix.Close(fd)
			}
		}
		fmt.Printf("%s: open %v write %v fdatasync %v", pass.name, per(cOpen), per(cWrite), per(cSync))
		if cTmp > 0 {
			fmt.Printf("; O_TMPFILE open %v", per(cTmp))
		}
		fmt.Println()
	}
	a := cpu()
	for i := 0; i < n; i++ {
		unix.Unlink(dir + "/f" + strconv.Itoa(i))
	}
	fmt.Printf("unlink %v\n", per(cpu()-a))
}
