#!/bin/sh
# fixmem-verdict.sh: after a CI job's tests, tell fixmem what they said about this commit.
#
#   sh deploy/ci/fixmem-verdict.sh junit.xml [more.xml ...]
#
# Run it in the checkout, after the test step, whether the tests passed or not (`if: always()`), with:
#   FIXMEM_OWNER, FIXMEM_PROJECT  whose memory and which project (the key the agents' turns carried)
#   FIXMEM_REDIS_URL              publish to the stream, or else
#   FIXMEM_API_URL, FIXMEM_API_TOKEN   POST /api/verdicts (the token names the owner)
#   FIXMEM_COMMIT (default: git rev-parse HEAD), FIXMEM_BRANCH, FIXMEM_DETAIL (a run URL), optional.
# It never fails the job: a verdict that cannot be sent is reported on stderr and the exit status is 0.
set -u
[ "$#" -gt 0 ] || { echo "fixmem-verdict: give the JUnit XML reports" >&2; exit 0; }
commit="${FIXMEM_COMMIT:-$(git rev-parse HEAD)}"
n=$#
for report in "$@"; do set -- "$@" --junit "$report"; done
shift "$n"
set -- "$@" --commit "$commit" --branch "${FIXMEM_BRANCH:-}" --detail "${FIXMEM_DETAIL:-}"
if [ -z "${FIXMEM_REDIS_URL:-}" ] && [ -n "${FIXMEM_API_URL:-}" ]; then
  fixmem verdict --print "$@" | curl -fsS -X POST -H "Authorization: Bearer ${FIXMEM_API_TOKEN:-}" \
    -H 'Content-Type: application/json' --data-binary @- "${FIXMEM_API_URL%/}/api/verdicts" \
    || echo "fixmem-verdict: POST /api/verdicts failed" >&2
else
  fixmem verdict "$@" || echo "fixmem-verdict: not published (exit $?)" >&2
fi
exit 0
