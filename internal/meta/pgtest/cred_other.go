//go:build !unix

package pgtest

import "os/exec"

type credential struct{}

func unprivileged(string) (*credential, error) { return nil, nil }

func (c *credential) apply(*exec.Cmd) {}
