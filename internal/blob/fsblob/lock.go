package fsblob

import "errors"

// lockName is the file in the root that an open Store holds locked
// (lockRoot, see "Crashes" in the package doc). Being upper case it is no
// key, and List never sees it.
const lockName = "LOCK"

// ErrLocked is returned (wrapped) by Open when another open Store holds
// the root: a server or an admin command, in this process or another, on
// this machine or, over a shared filesystem, on another.
var ErrLocked = errors.New("fsblob: the blob directory is in use by another process (a server, or a coffer admin command, on this storage path): stop it first")
