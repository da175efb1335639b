package config

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// PrintUsage writes the settings, their defaults and environment variables
// to w, in the format of flag.PrintDefaults.
func PrintUsage(w io.Writer) {
	def := Default()
	for _, s := range settings(&def) {
		fmt.Fprintf(w, "  -%s %s\n    \t%s\n    \t(default %s; env %s)\n", s.name, s.value.kind(), s.usage, showDefault(s), envName(s.name))
	}
	fmt.Fprintf(w, "  Root credentials come only from %s and %s, the master key only from %s.\n", EnvRootAccessKey, EnvRootSecretKey, EnvMasterKey)
}

func showDefault(s setting) string {
	d := s.value.String()
	if d == "" {
		return `""`
	}
	return d
}

// tomlKey renders a flag name as it is written in the TOML file.
func tomlKey(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return "[" + name[:i] + "] " + name[i+1:]
	}
	return name
}

// tomlLiteral renders the current value of s as a TOML value.
func tomlLiteral(s setting) string {
	switch s.value.(type) {
	case *boolValue, *portValue, *fractionValue, *intValue:
		return s.value.String()
	}
	return strconv.Quote(s.value.String())
}

// writeMarkdown writes docs/config.md: the reference of every setting,
// generated from the registry so that it cannot drift from the code.
func writeMarkdown(w io.Writer) error {
	def := Default()
	all := settings(&def)
	var b strings.Builder
	b.WriteString(`# Configuration

<!-- Generated from internal/config/flags.go by "go test ./internal/config -update". Do not edit. -->

` + "`coffer serve`" + ` takes its settings from four sources, each overriding the one before:

1. the built-in defaults below;
2. a TOML file named by ` + "`--config FILE`" + ` or ` + "`COFFER_CONFIG`" + ` (none by default);
3. environment variables, ` + "`COFFER_`" + ` followed by the flag name upper-cased with ` + "`-`" + ` and ` + "`.`" + ` turned into ` + "`_`" + `;
4. command-line flags (` + "`--name value`, `--name=value`" + `; ` + "`-name`" + ` works too).

An environment variable set to the empty string counts as unset. In the file,
every flag name except ` + "`config`" + ` is a key; a dotted name is a key in a table
(` + "`blob.kind`" + ` is ` + "`kind`" + ` under ` + "`[blob]`" + `). Unknown keys, values of the wrong type and
out-of-range values are errors that name the flag, variable or file and key;
the server does not start with a setting it does not understand.

| Flag | Environment | TOML key | Type | Default | Description |
| --- | --- | --- | --- | --- | --- |
`)
	for _, s := range all {
		key := "`" + tomlKey(s.name) + "`"
		if s.noFile {
			key = "—"
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s | `%s` | %s |\n",
			s.name, envName(s.name), key, strings.ReplaceAll(s.value.kind(), "|", `\|`), showDefault(s), strings.ReplaceAll(s.usage, "|", `\|`))
	}
	b.WriteString(`
**Types.** A *size* is a number of bytes with an optional binary unit: ` + "`1048576`, `128KiB`, `8MiB`, `5GiB`" + `
(units B, KiB, MiB, GiB, TiB, case-insensitive; decimal units such as MB are rejected
as ambiguous); in the file it may also be a TOML integer. A *duration* is a Go
duration such as ` + "`90s`, `10m`, `1h30m`" + `, written as a string in the file. A *fraction*
is a number from 0 to 1. An *integer* is a whole number, 0 or more. A *port* is 0 to 65535. A *bool* flag is set by its bare
name (` + "`--pprof`" + `) or ` + "`--pprof=false`" + `; the variable takes ` + "`true`/`false`/`1`/`0`" + `.

**Limits checked at start-up.** ` + "`block-size`" + ` is 64KiB to 1GiB; ` + "`inline-threshold`" + ` is at
most 1MiB and at most ` + "`block-size`" + `; ` + "`max-object-size`" + ` is at most 5TiB; the pprof
and console listeners may not share the S3 port or each other's; ` + "`region`" + ` is lowercase letters,
digits and dashes; ` + "`audit.max-bytes`" + ` is 0 or at least 1MiB, ` + "`audit.refused.per-source`" + ` and
` + "`audit.refused.per-minute`" + ` 1 to 100000. The ops listener (` + "`console-address`" + `) is turned off with
` + "`--console-address \"\"`" + ` or ` + "`console-address = \"\"`" + ` in the file (an empty environment variable
counts as unset); docs/observability.md describes what it serves.

## Root credentials

The root access key and secret are read only from the environment, never from
flags (which any user can see in ` + "`ps`" + `) or the file:

| Environment | Description |
| --- | --- |
| ` + "`" + EnvRootAccessKey + "`" + ` | root access key ID (3 to 128 printable characters, no ` + "`/`, `=`, `,`" + `) |
| ` + "`" + EnvRootSecretKey + "`" + ` | root secret access key (8 to 128 printable characters) |

Set both or neither. When both are set they are used and nothing is written to
disk. When neither is set, the server reads ` + "`<storage-path>/root-credentials`" + `; on the
first start it generates a key pair, writes it there (mode 0600, fsynced) and
prints it once to standard output — except with ` + "`meta.kind = \"postgres\"`" + `, where
a node given neither refuses to start (see below). The server refuses to start if
that file is readable or writable by group or others; fix it with ` + "`chmod 600`" + `.

## Gateway mode

With ` + "`blob.kind = \"s3\"`" + ` object blocks live in an upstream S3 bucket (another
Coffer, MinIO, Ceph, AWS) set by the ` + "`blob.s3.*`" + ` settings; metadata stays in
` + "`<storage-path>/meta`" + `. The upstream secret key is read only from the environment:

| Environment | Description |
| --- | --- |
| ` + "`" + EnvBlobS3SecretKey + "`" + ` | secret access key of ` + "`blob.s3.access-key`" + ` |

The bucket must exist, and the key needs s3:PutObject, s3:GetObject,
s3:DeleteObject and s3:ListBucket on it. Give every deployment (one node, or
the nodes of one PostgreSQL database) its own ` + "`blob.s3.prefix`" + `: garbage
collection deletes the blocks under its prefix that its own metadata does not
reference. A server claims its prefix at start with the object
` + "`<prefix>coffer-owner.json`" + `, which names its metadata store, and refuses to
start on a prefix another store claimed (docs/scale-out.md).

## Metadata in PostgreSQL

With ` + "`meta.kind = \"postgres\"`" + ` the metadata lives in the PostgreSQL database of
` + "`meta.postgres.url`" + ` instead of ` + "`<storage-path>/meta`" + `, so that several Coffer nodes can
share it (docs/design/0011-postgres-metadata.md). The schema is created and
upgraded at start; ` + "`coffer admin meta status`" + ` shows its version. A password in
the URL (` + "`password`, or `sslpassword` for the client's TLS key" + `) is accepted only from ` + "`COFFER_META_POSTGRES_URL`" + `; otherwise give it with
` + "`meta.postgres.password-file`" + ` or a ` + "`.pgpass`" + ` file. Multi-node operation (shared
GC, IAM changes seen by every node, the shared block store) is described in
docs/scale-out.md.

Every node of a database must have the same master key (below) and the same
root credentials, given explicitly: with ` + "`meta.kind = \"postgres\"`" + ` a node never
generates either, and one with no ` + "`" + EnvMasterKey + "`" + ` and no ` + "`<storage-path>/master-key`" + `
file, or with neither ` + "`" + EnvRootAccessKey + "`/`" + EnvRootSecretKey + "`" + ` nor a
` + "`<storage-path>/root-credentials`" + ` file, refuses to start.
The first node stores a check sealed with its key in the database; a node
whose key does not open it refuses to start.

The audit log is then the cluster's: every node writes its events to the
table ` + "`coffer_audit`" + ` of the same database (on a pool of three connections of
its own), and ` + "`coffer admin audit ls`" + ` and the console's Audit page of any node
show every node's events. ` + "`audit.retention`" + `, ` + "`audit.max-events`" + ` and
` + "`audit.max-bytes`" + ` (the table with its indexes) apply to the whole table, and
` + "`audit.path`" + ` must not be set: no node keeps an audit file.

## Master key

Secrets of users' access keys are stored sealed with AES-256-GCM under a
master key. ` + "`" + EnvMasterKey + "`" + ` gives it: 32 random bytes in base64 (44 characters) or
hex (64), for example from ` + "`head -c 32 /dev/urandom | base64`" + `. Without it the server
reads ` + "`<storage-path>/master-key`" + `, creating it (mode 0600) on the first start
(with ` + "`meta.kind = \"postgres\"`" + ` it is never created: see above). A
server started with a different master key than the one its IAM state was
sealed with refuses to start. Keep the key with your backups of the storage
path: without it the users' secret keys cannot be recovered (root's can).

## Storage layout

| Path | Contents |
| --- | --- |
| ` + "`<storage-path>/meta/`" + ` | metadata (Pebble, with ` + "`meta.kind = \"pebble\"`" + `; directory mode 0700, files 0600); locked while a server or ` + "`coffer admin gc`" + ` uses it |
| ` + "`<storage-path>/blobs/`" + ` | object blocks (with ` + "`blob.kind = \"fs\"`" + `; directories mode 0700, files 0600); locked (` + "`LOCK`" + `) while a server or ` + "`coffer admin gc`" + ` uses it, and claimed (` + "`coffer-owner.json`" + `) for the metadata store that first used it (below) |
| ` + "`<storage-path>/root-credentials`" + ` | generated root credentials (JSON, mode 0600) |
| ` + "`<storage-path>/master-key`" + ` | generated master key (base64, mode 0600), unless ` + "`" + EnvMasterKey + "`" + ` is set |
| ` + "`<storage-path>/audit.db`" + ` (and ` + "`-wal`, `-shm`" + `) | the audit log (SQLite, mode 0600), unless ` + "`audit.path`" + ` names another file |

The storage path is created with mode 0700. The metadata holds the IAM state
(console password hashes, sealed secrets), bucket policies and small objects'
data: at every start the server takes group's and others' permissions away from
` + "`<storage-path>/meta`" + ` and everything in it, logging a warning when it had to,
and it warns (changing nothing) when the storage path itself is open to group or
others.

The blob directory belongs to one metadata store. Garbage collection deletes
every block there that its metadata store does not reference, so a server whose
metadata store is another one (started with ` + "`meta.kind = \"postgres\"`" + ` on a single
node's storage path, or after ` + "`<storage-path>/meta`" + ` was removed while the blocks
stayed) would delete every block of the objects it does not know. The first
server to use the directory writes ` + "`<storage-path>/blobs/coffer-owner.json`" + `,
naming its metadata store's ID (` + "`coffer admin meta status`" + ` shows it), and a
server of another store refuses to start there, saying what to do; so does a
metadata store without buckets on a directory that holds blocks but no claim
yet, and a PostgreSQL node on one beside a single node's ` + "`meta`" + ` directory
(a single node claims its directory at its first start after the upgrade). A
second process on the same directory, such as ` + "`coffer admin gc --offline`" + `
beside a running node with its metadata on PostgreSQL, is refused by the lock.

Put the audit log on a filesystem of its own with ` + "`audit.path`" + ` where you can: it is
capped (` + "`audit.max-bytes`" + `) and its writes from refused and unauthenticated requests
are bounded (` + "`audit.refused.*`" + `), but on the metadata's filesystem every byte it takes
is one the metadata store cannot have. docs/observability.md describes the bounds.

## Example file

The built-in defaults, written as a file:

` + "```toml\n")
	for _, s := range all {
		if !s.noFile && !strings.Contains(s.name, ".") {
			fmt.Fprintf(&b, "%s = %s\n", s.name, tomlLiteral(s))
		}
	}
	var dotted []setting
	for _, s := range all {
		if !s.noFile && strings.Contains(s.name, ".") {
			dotted = append(dotted, s)
		}
	}
	// One [table] header per table, however the registry orders its keys.
	slices.SortStableFunc(dotted, func(a, b setting) int {
		return strings.Compare(a.name[:strings.LastIndexByte(a.name, '.')], b.name[:strings.LastIndexByte(b.name, '.')])
	})
	table := ""
	for _, s := range dotted {
		i := strings.LastIndexByte(s.name, '.')
		if t := s.name[:i]; t != table {
			fmt.Fprintf(&b, "\n[%s]\n", t)
			table = t
		}
		fmt.Fprintf(&b, "%s = %s\n", s.name[i+1:], tomlLiteral(s))
	}
	b.WriteString("```\n")
	_, err := io.WriteString(w, b.String())
	return err
}
