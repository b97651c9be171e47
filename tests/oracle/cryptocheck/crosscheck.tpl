{{- $ca := genCA .spec.caCN (int .spec.caDays) -}}
{{- $leaf := genSignedCert .spec.cn .spec.ips .spec.dns (int .spec.days) $ca -}}
{{- $self := genSelfSignedCert "" .spec.ips .spec.dns (int .spec.days) -}}
{{- $ecCA := genCAWithKey "ec ca" 10 (genPrivateKey "ecdsa") -}}
{{- $edLeaf := genSignedCertWithKey "ed leaf" nil (list "ed.example") 5 $ecCA (genPrivateKey "ed25519") -}}
{{- $goCA := buildCustomCert (b64enc .go.ca.Cert) (b64enc .go.ca.Key) -}}
{{- $goLeaf := genSignedCert "under go ca" (list "192.0.2.7") nil 3 $goCA -}}
{{- $goEC := buildCustomCert (b64enc .go.caEC.Cert) (b64enc .go.caEC.Key) -}}
{{- $goECLeaf := genSignedCertWithKey "ünicode leaf" nil (list "x.example") 3 $goEC (genPrivateKey "ecdsa") -}}
{{- $keys := dict "rsa" (genPrivateKey "rsa") "ecdsa" (genPrivateKey "ecdsa") "ed25519" (genPrivateKey "ed25519") -}}
{{- if .ours }}{{ $_ := set $keys "dsa" (genPrivateKey "dsa") }}{{ end -}}
{{- $aes := list -}}
{{- range .spec.aes }}{{ $aes = append $aes (dict "password" .password "plaintext" .plaintext "cipher" (encryptAES .password .plaintext)) }}{{ end -}}
{{- $fromGo := list -}}
{{- range .go.aes }}{{ $fromGo = append $fromGo (dict "plaintext" .plaintext "got" (decryptAES .password .cipher)) }}{{ end -}}
{{ toJson (dict "ca" $ca "leaf" $leaf "self" $self "ecCA" $ecCA "edLeaf" $edLeaf "goLeaf" $goLeaf "goECLeaf" $goECLeaf "keys" $keys "aes" $aes "fromGo" $fromGo "bcrypt" (dict "password" .spec.bcrypt "hash" (bcrypt .spec.bcrypt)) "htpasswd" (htpasswd "admin" .spec.bcrypt)) }}
