package web

// SignInParts are what SignIn's handlers use, given to New.
type SignInParts struct {
	Audit auditAppender
}

// missing names the required parts p lacks.
func (p SignInParts) missing() []string {
	return absent("SignIn",
		part{"Audit", p.Audit == nil},
	)
}

// SignIn signs people in and out, locally or through OpenID Connect.
type SignIn struct {
	SignInParts
	*core
	identity
}

// identity is Identity embedded under a name the wiring cannot set.
type identity = Identity
