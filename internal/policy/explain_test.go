package policy

import "testing"

// TestExplain checks that Explain names the statement that decided: the
// first Deny that applies wherever it stands in the document, else the
// first Allow, by its position in the document and its Sid.
func TestExplain(t *testing.T) {
	d := doc(
		`{"Sid":"ReadB","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`,
		`{"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*"}`,
		`{"Sid":"NoSecrets","Effect":"Deny","Action":"s3:*","Resource":"arn:aws:s3:::b/secret/*"}`,
		`{"Sid":"ReadAll","Effect":"Allow","Action":"s3:GetObject","Resource":"*"}`,
	)
	p := mustIdentity(t, d)
	for _, tc := range []struct {
		name string
		ctx  Context
		want Decision
		ref  StatementRef
	}{
		{"first allow", req(getObj, objARN), Allow, StatementRef{Index: 1, Sid: "ReadB"}},
		{"allow without sid", req(putObj, objARN), Allow, StatementRef{Index: 2}},
		{"deny after allows", req(getObj, "arn:aws:s3:::b/secret/x"), Deny, StatementRef{Index: 3, Sid: "NoSecrets"}},
		{"later allow", req(getObj, "arn:aws:s3:::c/k"), Allow, StatementRef{Index: 4, Sid: "ReadAll"}},
		{"none", req("s3:DeleteObject", objARN), NotApplicable, StatementRef{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ref := p.Explain(&tc.ctx)
			if got != tc.want || ref != tc.ref {
				t.Errorf("Explain = %v, %+v; want %v, %+v", got, ref, tc.want, tc.ref)
			}
		})
	}
}
