"""`tiersim capacity`: the largest load or smallest capacity that meets an SLO, and the knee of the curve."""
