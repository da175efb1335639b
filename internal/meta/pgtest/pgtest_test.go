package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestStartDownUp: a server of Start's refuses connections after Down and
// takes them again after Up, with the schemas it had.
func TestStartDownUp(t *testing.T) {
	s := Start(t)
	url := s.NewSchema(t)
	ping := func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return s.exec(ctx, "SELECT 1")
	}
	if err := ping(); err != nil {
		t.Fatalf("before Down: %v", err)
	}
	s.Down(t)
	if err := ping(); err == nil {
		t.Fatal("a connection succeeded after Down")
	}
	s.Up(t)
	if err := ping(); err != nil {
		t.Fatalf("after Up: %v", err)
	}
	// The schema survived: a table lands in it (with no schema on the
	// search path, CREATE TABLE fails).
	c, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(t.Context(), "CREATE TABLE survived (x int)"); err != nil {
		t.Errorf("create a table in the schema after Up: %v", err)
	}
}
