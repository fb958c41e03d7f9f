package types

import "slices"

// CloneAuth is a deep copy of a (nil for nil).
func CloneAuth(a *EndpointAuth) *EndpointAuth {
	if a == nil {
		return nil
	}
	c := *a
	if a.Basic != nil {
		b := *a.Basic
		c.Basic = &b
	}
	if a.OAuth2 != nil {
		o := *a.OAuth2
		o.Scopes = slices.Clone(a.OAuth2.Scopes)
		c.OAuth2 = &o
	}
	if a.TLSClientCert != nil {
		t := *a.TLSClientCert
		c.TLSClientCert = &t
	}
	return &c
}
