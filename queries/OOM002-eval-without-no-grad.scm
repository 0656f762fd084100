; OOM002 eval-without-no-grad: a forward pass in evaluation code with autograd on.
; The host decides whether the callee is a network, whether the code is evaluation
; (after `.eval()`, in an evaluation function, in a loop over an evaluation loader),
; and whether gradients are disabled by any route.
(call
  function: [(identifier) (attribute)] @callee
  (#not-has-ancestor? @callee "decorator")) @forward
