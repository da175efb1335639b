package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jkind is the kind of a JSON value.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// jvalue is a decoded JSON value that keeps object members in document
// order. str holds a string, the text of a number, or "true"/"false".
type jvalue struct {
	kind jkind
	str  string
	arr  []jvalue
	obj  []jmember
}

type jmember struct {
	key string
	val jvalue
}

// maxDepth bounds the nesting of a policy document. The deepest valid
// policy nests 5 levels (document, Statement array, statement, Condition,
// operator); the bound keeps hostile input from recursing deeply.
const maxDepth = 16

// decodeJSON decodes doc into a jvalue, rejecting what encoding/json
// would silently accept: a member name repeated within one object (json
// keeps the last, so a reviewer and the evaluator could read different
// policies) and anything after the top-level value.
func decodeJSON(doc []byte) (jvalue, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return jvalue{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jvalue{}, errorf("invalid JSON: unexpected data after the policy document")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (jvalue, error) {
	if depth > maxDepth {
		return jvalue{}, errorf("invalid JSON: nested more than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return jvalue{}, jsonError(err)
	}
	switch t := tok.(type) {
	case nil:
		return jvalue{kind: jNull}, nil
	case bool:
		if t {
			return jvalue{kind: jBool, str: "true"}, nil
		}
		return jvalue{kind: jBool, str: "false"}, nil
	case json.Number:
		return jvalue{kind: jNumber, str: t.String()}, nil
	case string:
		return jvalue{kind: jString, str: t}, nil
	case json.Delim:
		if t == '[' {
			v := jvalue{kind: jArray, arr: []jvalue{}}
			for dec.More() {
				e, err := decodeValue(dec, depth+1)
				if err != nil {
					return jvalue{}, err
				}
				v.arr = append(v.arr, e)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return jvalue{}, jsonError(err)
			}
			return v, nil
		}
		return decodeObject(dec, depth)
	}
	return jvalue{}, errorf("invalid JSON: unexpected token %v", tok)
}

func decodeObject(dec *json.Decoder, depth int) (jvalue, error) {
	v := jvalue{kind: jObject}
	var seen map[string]bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jvalue{}, jsonError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return jvalue{}, errorf("invalid JSON: object key is not a string")
		}
		if seen == nil {
			seen = make(map[string]bool)
		}
		if seen[key] {
			return jvalue{}, errorf("duplicate field %q in one JSON object", key)
		}
		seen[key] = true
		e, err := decodeValue(dec, depth+1)
		if err != nil {
			return jvalue{}, err
		}
		v.obj = append(v.obj, jmember{key: key, val: e})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return jvalue{}, jsonError(err)
	}
	return v, nil
}

func jsonError(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return errorf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errorf("invalid JSON: unexpected end of document")
	}
	return errorf("invalid JSON: %s", err.Error())
}

// member returns the value of key in object v.
func (v *jvalue) member(key string) (*jvalue, bool) {
	for i := range v.obj {
		if v.obj[i].key == key {
			return &v.obj[i].val, true
		}
	}
	return nil, false
}

// describe names v's kind for error messages.
func (v *jvalue) describe() string { return fmt.Sprintf("a JSON %s", v.kind) }
