package procs

import "testing"

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		env        string
		want       int // GOMAXPROCS after
		wantReason string
	}{
		{name: "setting", n: 3, env: "7", want: 3, wantReason: "procs"},
		{name: "environment", env: "7", want: 2},
		{name: "automatic", want: 4, wantReason: "twice the CPUs available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procs := 2 // the runtime's default on a 2-CPU machine
			set := func(n int) int {
				prev := procs
				if n > 0 {
					procs = n
				}
				return prev
			}
			getenv := func(k string) string {
				if k == "GOMAXPROCS" {
					return tc.env
				}
				return ""
			}
			n, reason := Apply(tc.n, getenv, set)
			if procs != tc.want || reason != tc.wantReason || (reason != "" && n != tc.want) || CPUs() != 2 {
				t.Errorf("Apply(%d, GOMAXPROCS=%q) = %d, %q, GOMAXPROCS %d, CPUs %d; want %d, %q, CPUs 2", tc.n, tc.env, n, reason, procs, CPUs(), tc.want, tc.wantReason)
			}
		})
	}
}
