Hello %{ for n in names ~}
${upper(n)} 
%{~ endfor }!
