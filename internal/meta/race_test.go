//go:build race

package meta

// raceEnabled reports a -race build, under which the PostgreSQL runs of
// the randomized model tests take fewer steps: pgx's work under the race
// detector would otherwise dominate CI's run of this package.
const raceEnabled = true
