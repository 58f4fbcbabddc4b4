package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/reinhq/rein/mcp"
)

// oauthOptions are the OAuth settings of a remote server, as --mcp
// KEY=VALUE options and as the keys of a [mcp.servers.NAME.oauth] table.
// Values of client_secret, idp_client_secret and id_token may be ${VAR}
// templates, resolved at once so the values need not be written down.
const oauthOptions = "client_id, client_secret, client_metadata_url, grant, redirect_url, private_key_file, idp_issuer, idp_client_id, idp_client_secret, idp_token_endpoint, id_token"

// oauthOption applies one OAuth setting; handled is false for a key that
// is not one.
func oauthOption(o *mcp.OAuthConfig, key, val string) (handled bool, err error) {
	secret := func() (string, error) {
		v, err := mcp.Expand(val, nil)
		if err != nil {
			return "", fmt.Errorf("%s: %v", key, err)
		}
		return v, nil
	}
	idp := func() *mcp.IdentityProvider {
		if o.IdP == nil {
			o.IdP = &mcp.IdentityProvider{}
		}
		return o.IdP
	}
	switch key {
	case "client_id":
		o.ClientID = val
	case "client_secret":
		o.ClientSecret, err = secret()
	case "client_metadata_url":
		o.ClientMetadataURL = val
	case "grant":
		o.Grant = val
	case "redirect_url":
		o.RedirectURL = val
	case "private_key_file":
		b, rerr := os.ReadFile(val)
		if rerr != nil {
			return true, fmt.Errorf("private_key_file: %v", rerr)
		}
		o.PrivateKeyPEM = string(b)
	case "idp_issuer":
		idp().Issuer = val
	case "idp_client_id":
		idp().ClientID = val
	case "idp_client_secret":
		idp().ClientSecret, err = secret()
	case "idp_token_endpoint":
		idp().TokenEndpoint = val
	case "id_token":
		tok, serr := secret()
		if serr != nil {
			return true, serr
		}
		idp().IDToken = func(context.Context) (string, error) { return tok, nil }
	default:
		return false, nil
	}
	return true, err
}

// oauthTable converts a [mcp.servers.NAME.oauth] table.
func oauthTable(name string, table map[string]string) (*mcp.OAuthConfig, error) {
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	o := &mcp.OAuthConfig{}
	for _, k := range keys {
		ok, err := oauthOption(o, k, table[k])
		if err != nil {
			return nil, usageErrorf("[mcp.servers.%s.oauth] %v", name, err)
		}
		if !ok {
			return nil, usageErrorf("[mcp.servers.%s.oauth] unknown key %q: use %s", name, k, oauthOptions)
		}
	}
	return o, nil
}
