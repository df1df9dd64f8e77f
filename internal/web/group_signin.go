package web

// SignIn signs people in and out, locally or through OpenID Connect.
type SignIn struct {
	*core
	identity
	Audit auditAppender
}

// identity is Identity embedded under a name the wiring cannot set.
type identity = Identity
