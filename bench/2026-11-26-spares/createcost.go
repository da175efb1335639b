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

func main() {
	runtime.LockOSThread()
	dir := os.Args[1]
	os.MkdirAll(dir, 0o755)
	buf := make([]byte, 100<<10)
	n := 1000
	var cOpen, cWrite, cSync, cTmp time.Duration
	for i := 0; i < n; i++ {
		name := dir + "/f" + strconv.Itoa(i)
		a := cpu()
		fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		b := cpu()
		if err != nil {
			panic(err)
		}
		unix.Write(fd, buf)
		c := cpu()
		unix.Fdatasync(fd)
		d := cpu()
		unix.Close(fd)
		cOpen += b - a
		cWrite += c - b
		cSync += d - c
		a = cpu()
		fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		cTmp += cpu() - a
		if err != nil {
			panic(err)
		}
		unix.Close(fd)
	}
	fmt.Printf("new file: open %v write %v fdatasync %v; O_TMPFILE open %v\n", cOpen/time.Duration(n), cWrite/time.Duration(n), cSync/time.Duration(n), cTmp/time.Duration(n))
	cOpen, cWrite, cSync = 0, 0, 0
	for i := 0; i < n; i++ {
		name := dir + "/f" + strconv.Itoa(i)
		a := cpu()
		fd, _ := unix.Open(name, unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		b := cpu()
		unix.Write(fd, buf)
		c := cpu()
		unix.Fdatasync(fd)
		d := cpu()
		unix.Close(fd)
		cOpen += b - a
		cWrite += c - b
		cSync += d - c
	}
	fmt.Printf("overwrite: open %v write %v fdatasync %v\n", cOpen/time.Duration(n), cWrite/time.Duration(n), cSync/time.Duration(n))
	a := cpu()
	for i := 0; i < n; i++ {
		unix.Unlink(dir + "/f" + strconv.Itoa(i))
	}
	fmt.Printf("unlink %v\n", (cpu()-a)/time.Duration(n))
}
