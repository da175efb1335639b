package iam

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
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

// CredentialStamp returns a value that stays the same for the sign-in
// name (root's access key ID or a user's name) until its credential
// changes, and false if the name cannot sign in to the console at all
// (no such principal, or a user without a password). It changes when
// root's secret key does; for a user, when its password is set or its
// hash upgraded, when its sessions are ended (disabling it), and when it
// is deleted and created again. Whatever the console ties to a
// credential with it (device cookies) ends with the credential, as its
// sessions do (SessionValid). It reveals nothing of the credential: a MAC
// of it.
func (m *IAM) CredentialStamp(name string) ([]byte, bool) {
	if m.isRoot(name) {
		return m.MAC("credential stamp root", append(append(append([]byte(nil), m.rootAK...), 0), m.rootSK...)), true
	}
	u, ok := m.snap.Load().doc.Users[name]
	if !ok || u.Password == "" {
		return nil, false
	}
	msg := make([]byte, 0, len(u.ID)+len(u.Password)+32)
	msg = append(msg, u.ID...)
	msg = append(msg, 0)
	msg = append(msg, u.Password...)
	msg = append(msg, 0)
	msg = binary.BigEndian.AppendUint64(msg, uint64(u.SessionsEnded.Unix()))
	msg = binary.BigEndian.AppendUint32(msg, uint32(u.SessionsEnded.Nanosecond()))
	return m.MAC("credential stamp user", msg), true
}
