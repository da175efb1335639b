package iam

import (
	"crypto/hmac"
	"crypto/sha256"
)

// macKeyLabel derives the key of MAC from the master key: a key of its
// own, so that no MAC is ever made with the key that seals secrets.
const macKeyLabel = "coffer/iam/mac/v1"

// newMACKey derives the key of MAC from the master key.
func newMACKey(master []byte) []byte {
	h := hmac.New(sha256.New, master)
	h.Write([]byte(macKeyLabel))
	return h.Sum(nil)
}

// MAC returns an HMAC-SHA256 of msg under a key derived from the master
// key, for purpose: a tag that only this store's nodes can make and
// check, stable across restarts and the same on every node of a shared
// store (they share the master key). Different purposes never make the
// same tag for the same msg (purposes are constants without a NUL
// byte). Compare tags with hmac.Equal.
func (m *IAM) MAC(purpose string, msg []byte) []byte {
	h := hmac.New(sha256.New, m.macKey)
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write(msg)
	return h.Sum(nil)
}
