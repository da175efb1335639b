package fsblob

import (
	"os"
	"strconv"
	"time"
)

// Spare files (see "Spare files" in the package doc).

const (
	// sparePrefix starts the names, in .tmp, of spare files; like
	// freePrefix it never meets a temporary file's name.
	sparePrefix = "spare."
	// spareRetry is how long the spare loop waits after failing to create
	// a file (no inodes left, too many open files) before it tries again.
	spareRetry = time.Second
)

// spare is an empty file in .tmp, open for writing, waiting for a Put.
type spare struct {
	f    *os.File
	name string // in .tmp
}

// spareLoop keeps s.spares full of files from create until stop is
// closed, then closes and removes those left over. A failed create (no
// inodes left, too many open files) is tried again after retry; Puts
// create their own files meanwhile.
func (s *Store) spareLoop(create func() (spare, error), retry time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer s.removeSpares()
	for {
		sp, err := create()
		if err != nil {
			select {
			case <-stop:
				return
			case <-time.After(retry):
				continue
			}
		}
		select {
		case s.spares <- sp:
		case <-stop:
			sp.remove(s)
			return
		}
	}
}

// newSpare creates an empty file in .tmp (without direct I/O).
func (s *Store) newSpare() (spare, error) {
	tmpd, err := s.dir(tmpDir)
	if err != nil {
		return spare{}, err
	}
	defer tmpd.done()
	name := sparePrefix + strconv.FormatUint(s.tmpSeq.Add(1), 36)
	f, _, err := s.openTmp(tmpd, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, false)
	if err != nil {
		return spare{}, err
	}
	return spare{f: f, name: name}, nil
}

// takeSpare returns a spare file for a Put that writes through the page
// cache, if one is ready.
func (s *Store) takeSpare(direct bool) (spare, bool) {
	if s.spares == nil || direct {
		return spare{}, false
	}
	select {
	case sp := <-s.spares:
		return sp, true
	default:
		return spare{}, false
	}
}

// removeSpares closes and removes the spare files that are ready.
func (s *Store) removeSpares() {
	for {
		select {
		case sp := <-s.spares:
			sp.remove(s)
		default:
			return
		}
	}
}

func (sp spare) remove(s *Store) {
	sp.f.Close()
	if tmpd, err := s.dir(tmpDir); err == nil {
		tmpd.root.Remove(sp.name)
		tmpd.done()
	}
}
