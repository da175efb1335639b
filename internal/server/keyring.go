package server

import (
	"context"
	"errors"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// keyring adapts iam to sigv4.Keyring: sigv4 recognises an unknown key by
// sigv4.ErrUnknownKey, iam reports it as iam.ErrUnknownKey, and neither
// leaf imports the other.
type keyring struct{ iam *iam.IAM }

var _ sigv4.Keyring = keyring{}

// SecretKey implements sigv4.Keyring.
func (k keyring) SecretKey(ctx context.Context, accessKeyID string) (string, error) {
	sk, err := k.iam.SecretKey(ctx, accessKeyID)
	if errors.Is(err, iam.ErrUnknownKey) {
		return "", sigv4.ErrUnknownKey
	}
	return sk, err
}
