package memlimit

import (
	"testing"
	"testing/fstest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestCgroup(t *testing.T) {
	const v1self = "12:pids:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n"
	for _, tc := range []struct {
		name   string
		fs     fstest.MapFS
		self   string
		want   int64
		file   string
		wantOK bool
	}{
		{
			name: "v2 own group",
			fs:   fstest.MapFS{"sys/fs/cgroup/app/memory.max": file("209715200\n"), "sys/fs/cgroup/memory.max": file("max\n")},
			self: "0::/app\n",
			want: 200 << 20, file: "/sys/fs/cgroup/app/memory.max", wantOK: true,
		},
		{
			name: "v2 parent is tighter",
			fs:   fstest.MapFS{"sys/fs/cgroup/a/b/memory.max": file("max\n"), "sys/fs/cgroup/a/memory.max": file("104857600\n")},
			self: "0::/a/b\n",
			want: 100 << 20, file: "/sys/fs/cgroup/a/memory.max", wantOK: true,
		},
		{
			name: "v2 unlimited",
			fs:   fstest.MapFS{"sys/fs/cgroup/memory.max": file("max\n")},
			self: "0::/\n",
		},
		{
			name: "v2 namespace root",
			fs:   fstest.MapFS{"sys/fs/cgroup/memory.max": file("268435456\n")},
			self: "0::/\n",
			want: 256 << 20, file: "/sys/fs/cgroup/memory.max", wantOK: true,
		},
		{
			name: "v1 own group",
			fs: fstest.MapFS{
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": file("209715200\n"),
				"sys/fs/cgroup/memory/memory.limit_in_bytes":                 file("9223372036854771712\n"),
			},
			self: v1self,
			want: 200 << 20, file: "/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", wantOK: true,
		},
		{
			name: "v1 group hidden by the namespace, root unlimited",
			fs:   fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n")},
			self: v1self,
		},
		{
			name: "v1 group hidden by the namespace, root limited",
			fs:   fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": file("536870912\n")},
			self: v1self,
			want: 512 << 20, file: "/sys/fs/cgroup/memory/memory.limit_in_bytes", wantOK: true,
		},
		{
			name: "v1 controller listed with others",
			fs:   fstest.MapFS{"sys/fs/cgroup/memory/x/memory.limit_in_bytes": file("1048576\n")},
			self: "3:cpu,memory:/x\n",
			want: 1 << 20, file: "/sys/fs/cgroup/memory/x/memory.limit_in_bytes", wantOK: true,
		},
		{
			name: "hybrid: v2 unified mount",
			fs:   fstest.MapFS{"sys/fs/cgroup/unified/svc/memory.max": file("73400320\n")},
			self: "0::/svc\n",
			want: 70 << 20, file: "/sys/fs/cgroup/unified/svc/memory.max", wantOK: true,
		},
		{name: "no cgroups", fs: fstest.MapFS{}, self: ""},
		{name: "v1 larger than int64", fs: fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": file("99999999999999999999\n")}, self: "4:memory:/\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, ok, err := Cgroup(tc.fs, tc.self)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK || l.Bytes != tc.want || l.File != tc.file {
				t.Errorf("Cgroup = %+v, %v; want {%d %s}, %v", l, ok, tc.want, tc.file, tc.wantOK)
			}
		})
	}
}

func TestCgroupMalformed(t *testing.T) {
	_, _, err := Cgroup(fstest.MapFS{"sys/fs/cgroup/memory.max": file("lots\n")}, "0::/\n")
	if err == nil {
		t.Error("a malformed memory.max was accepted")
	}
}

func TestApply(t *testing.T) {
	fsys := fstest.MapFS{"sys/fs/cgroup/memory.max": file("209715200\n")}
	var set []int64
	setLimit := func(n int64) int64 { set = append(set, n); return 0 }
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	d, err := Apply(getenv, fsys, "0::/\n", setLimit)
	if err != nil || !d.Set || d.Limit != int64(200<<20*Fraction) || len(set) != 1 || set[0] != d.Limit {
		t.Errorf("Apply = %+v, %v; set %v", d, err, set)
	}

	set = nil
	env["GOMEMLIMIT"] = "150MiB"
	d, err = Apply(getenv, fsys, "0::/\n", setLimit)
	if err != nil || d.Set || len(set) != 0 {
		t.Errorf("with GOMEMLIMIT: Apply = %+v, %v; set %v; want nothing set", d, err, set)
	}

	delete(env, "GOMEMLIMIT")
	d, err = Apply(getenv, fstest.MapFS{}, "0::/\n", setLimit)
	if err != nil || d.Set || len(set) != 0 {
		t.Errorf("without a limit: Apply = %+v, %v; set %v; want nothing set", d, err, set)
	}
}
