%{ if enabled ~}
endpoint: ${endpoint}
%{ endif ~}
name: ${name}
