package gateway

import "errors"

// ErrDenied means NATS refused a request for want of permission: the
// identity may not do it (a gateway's key creating a stream).
var ErrDenied = errors.New("permission denied")

// ErrNotProvisioned means the fabric's streams (FLEET, the projection
// buckets) do not exist and this identity may not create them: the admin
// provisions them ('fleetd provision' with the admin key).
var ErrNotProvisioned = errors.New("fabric not provisioned")
