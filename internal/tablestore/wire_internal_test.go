package tablestore

import "testing"

// Which connections post transactions themselves: those signed with an
// account key or a token, to Table storage. A SAS (its signature in the
// URL) and Cosmos DB's Table API go through the SDK's own path.
func TestWhichConnectionsPostTransactionsThemselves(t *testing.T) {
	const key = "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	cases := []struct {
		name, cs string
		endpoint string // "": the SDK's path
	}{
		{"Azurite", "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" + key + ";TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;", "http://127.0.0.1:10002/devstoreaccount1"},
		{"an account, its endpoint derived", "DefaultEndpointsProtocol=https;AccountName=acct;" + key + ";EndpointSuffix=core.windows.net", "https://acct.table.core.windows.net"},
		{"a SAS", "AccountName=acct;SharedAccessSignature=sv=2022-11-02&sig=abc", ""},
		{"a key that is not base64", "AccountName=acct;AccountKey=not base64!", ""},
		{"Cosmos DB", "DefaultEndpointsProtocol=https;AccountName=acct;" + key + ";TableEndpoint=https://acct.table.cosmos.azure.com:443/;", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := sharedKeyWire(c.cs, clientOptions(Options{}))
			switch {
			case c.endpoint == "" && w != nil:
				t.Errorf("posts transactions to %s itself, want the SDK's path", w.endpoint)
			case c.endpoint != "" && (w == nil || w.endpoint != c.endpoint):
				t.Errorf("got %+v, want its own transactions to %s", w, c.endpoint)
			}
		})
	}
}
