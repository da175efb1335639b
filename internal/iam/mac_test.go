package iam

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
)

// TestMAC: tags depend on the master key, the purpose and the message,
// and nothing else: two IAMs with one master key (a restart, another
// node) make the same tag, another master key or purpose another.
func TestMAC(t *testing.T) {
	key := bytes.Repeat([]byte{7}, MasterKeySize)
	newIAM := func(master []byte) *IAM {
		m, err := New(Config{RootAccessKey: "root", RootSecretKey: "rootsecret", MasterKey: master})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := newIAM(key), newIAM(key)
	other := newIAM(bytes.Repeat([]byte{8}, MasterKeySize))
	msg := []byte("payload")
	tag := a.MAC("p", msg)
	if len(tag) != 32 {
		t.Fatalf("tag of %d bytes, want 32", len(tag))
	}
	if !hmac.Equal(tag, b.MAC("p", msg)) {
		t.Error("two IAMs with one master key made different tags")
	}
	for name, got := range map[string][]byte{
		"another master key": other.MAC("p", msg),
		"another purpose":    a.MAC("q", msg),
		"another message":    a.MAC("p", []byte("payload!")),
	} {
		if hmac.Equal(tag, got) {
			t.Errorf("%s: the same tag", name)
		}
	}
	// Not the sealing key's MAC: a tag never is an HMAC under the master
	// key itself.
	h := hmac.New(sha256.New, key)
	h.Write([]byte("p\x00payload"))
	if hmac.Equal(tag, h.Sum(nil)) {
		t.Error("MAC uses the master key itself")
	}
}
