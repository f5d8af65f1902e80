! check_fortran.f90 - the Fortran module mpikvs under mpirun, good input
! and bad: a miss on a key never put, a put then a get of its value,
! scalars and arrays of any type as keys and values, batches and started
! batches (tested and waited for), put_if_absent, statistics, the tier's
! invalidation, counters, save and load; and each bad argument a return
! code with a last_error text that names it, never a read or write past
! an array: a wrong-size key or value, a non-contiguous section, a short
! status array, a closed handle, an unknown option, MPI_COMM_NULL; and
! the surrogate calls on a table with "near" and "verify" (surrogates).
! Each rank prints its failures and "check_fortran: rank R: P passed,
! F failed"; it exits 1 on a failure.
program check_fortran
  use, intrinsic :: iso_fortran_env, only: int32, int64, real64
  use mpi_f08
  use mpikvs
  implicit none

  integer, parameter :: N = 4
  type(mpikvs_t) :: kvs, never
  type(mpikvs_options) :: opt
  type(mpikvs_request) :: req
  type(mpikvs_stats) :: st
  type(mpikvs_load_report) :: report
  integer(int64) :: seen
  integer :: ranks, unit
  character(len=1024) :: dir
  character(len=:), allocatable :: path
  integer(int64) :: key, keys(N)
  integer(int64), asynchronous :: akeys(2 * N)
  integer(int32) :: small_key
  real(real64) :: v(2), w(2), v3(3), big(4), values(2, N), present(2)
  real(real64), asynchronous :: avalues(2, N)
  integer :: status(N), short_status(N - 1), rank, rc, i, pass = 0, fail = 0
  integer, asynchronous :: astatus(N)
  logical :: done
  character(len=:), allocatable :: text
  character(len=8) :: ckey

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks)

  ! open without a config: 8-byte keys, 16-byte values
  opt%key_size = 8
  opt%value_size = 16
  rc = mpikvs_open(MPI_COMM_WORLD, kvs, opt)
  call expect(rc == MPIKVS_OK, 'open key_size=8 value_size=16: ' // &
       mpikvs_strerror(rc) // ': ' // mpikvs_last_error(kvs))
  if (rc /= MPIKVS_OK) call finish()
  call expect(mpikvs_key_size(kvs) == 8 .and. mpikvs_value_size(kvs) == 16, &
       'key_size 8, value_size 16')

  ! a miss on a key never put; a scalar key
  key = 987654321_int64
  v = -1
  rc = mpikvs_get(kvs, key, v)
  call expect(rc == MPIKVS_MISS .and. all(v == -1), &
       'get of a key never put: MPIKVS_MISS, value untouched')

  ! put then get, the same key on both ranks, after a fence
  key = 42
  v = [1.5_real64, -2.25_real64]
  call expect(mpikvs_put(kvs, key, v) == MPIKVS_OK, 'put of key 42')
  call expect(mpikvs_fence(kvs) == MPIKVS_OK, 'fence')
  w = 0
  rc = mpikvs_get(kvs, key, w)
  call expect(rc == MPIKVS_OK .and. all(w == v), 'get of key 42: its value')

  ! any type: an 8-character string as a key (a variable: gfortran 12
  ! describes a character constant as of length 1, which is refused)
  ckey = 'abcdefgh'
  rc = mpikvs_put(kvs, ckey, v)
  w = 0
  if (rc == MPIKVS_OK) rc = mpikvs_get(kvs, ckey, w)
  call expect(rc == MPIKVS_OK .and. all(w == v), 'a character(8) key: ' // &
       mpikvs_strerror(rc) // ': ' // mpikvs_last_error(kvs))

  ! wrong sizes: the argument named, the sizes said
  small_key = 42
  rc = mpikvs_get(kvs, small_key, w)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'mpikvs_get: key: 4 bytes') > 0 &
       .and. index(text, '8 bytes') > 0, 'a 4-byte key: ' // text)
  rc = mpikvs_get(kvs, key, v3)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'value: 24 bytes') > 0 &
       .and. index(text, '16 bytes') > 0, 'a 24-byte value: ' // text)
  rc = mpikvs_put(kvs, key, v3(1:1))
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'mpikvs_put: value: 8 bytes') > 0, &
       'put of an 8-byte value: ' // text)

  ! a section with a stride: refused, nothing read or written
  big = 7
  rc = mpikvs_get(kvs, key, big(1:4:2))
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'value: not contiguous') > 0 &
       .and. all(big == 7), 'a strided value: ' // text)

  ! the library's last error again after a good call
  rc = mpikvs_get(kvs, key, w)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_OK .and. index(text, 'not contiguous') == 0, &
       'after a good call last_error is no more the binding''s: ' // text)

  ! batches
  keys = [(100_int64 + i, i = 1, N)]
  values = reshape([(real(i, real64), i = 1, 2 * N)], [2, N])
  call expect(mpikvs_put_batch(kvs, N, keys, values) == MPIKVS_OK, 'put_batch')
  call expect(mpikvs_fence(kvs) == MPIKVS_OK, 'fence')
  values = 0
  status = -99
  rc = mpikvs_get_batch(kvs, N, keys, values, status)
  call expect(rc == MPIKVS_OK .and. all(status == MPIKVS_OK) .and. &
       all(values == reshape([(real(i, real64), i = 1, 2 * N)], [2, N])), &
       'get_batch of 4 put keys: their values')
  rc = mpikvs_get_batch(kvs, N, keys, values, short_status)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'mpikvs_get_batch: status:') > 0 &
       .and. index(text, 'short of n = 4') > 0, 'a status of 3 for n = 4: ' // text)
  rc = mpikvs_get_batch(kvs, N, keys(1:N - 1), values, status)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'keys: 24 bytes') > 0, &
       'keys of 3 for n = 4: ' // text)
  rc = mpikvs_put_batch(kvs, -1, keys, values)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(mpikvs_last_error(kvs), 'n: -1') > 0, &
       'n = -1: ' // mpikvs_last_error(kvs))

  ! started: a strided key array refused before anything starts
  akeys = [(100_int64 + i, i = 1, 2 * N)]
  rc = mpikvs_get_batch_start(kvs, N, akeys(1:2 * N:2), avalues, astatus, req)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'keys: not contiguous') > 0, &
       'a strided started batch: ' // text)
  ! and a good one, polled until done
  avalues = 0
  astatus = -99
  rc = mpikvs_get_batch_start(kvs, N, akeys, avalues, astatus, req)
  do i = 1, 1000000
     if (rc /= MPIKVS_OK) exit
     rc = mpikvs_test(kvs, req, done)
     if (done) exit
  end do
  call expect(rc == MPIKVS_OK .and. done .and. all(astatus == MPIKVS_OK) .and. &
       avalues(2, N) == 2 * N, 'started get_batch, tested until done')

  ! put_if_absent: the value present
  present = 0
  rc = mpikvs_put_if_absent(kvs, key, [9.0_real64, 9.0_real64], present)
  call expect(rc == MPIKVS_PRESENT .and. all(present == v), &
       'put_if_absent of key 42: MPIKVS_PRESENT and its value')

  ! a started put batch, then a get batch completed by wait
  rc = mpikvs_put_batch_start(kvs, N, akeys, avalues, req)
  if (rc == MPIKVS_OK) rc = mpikvs_wait(kvs, req)
  call expect(rc == MPIKVS_OK, 'started put_batch, waited for')
  avalues = 0
  rc = mpikvs_get_batch_start(kvs, N, akeys, avalues, astatus, req)
  if (rc == MPIKVS_OK) rc = mpikvs_wait(kvs, req)
  call expect(rc == MPIKVS_OK .and. all(astatus == MPIKVS_OK) .and. &
       avalues(2, N) == 2 * N, 'started get_batch, waited for: the values')
  call expect(mpikvs_wait(kvs, req) == MPIKVS_ERR_INVAL, 'a second wait')

  call expect(mpikvs_tier_invalidate(kvs) == MPIKVS_OK, 'tier_invalidate')

  ! counters: every rank adds 1 to counter 0; rank 0 sets counter 1
  call expect(mpikvs_counters(kvs) == 4, 'four counters by default')
  call expect(mpikvs_counter_add(kvs, 0, 1_int64) == MPIKVS_OK, 'counter_add')
  if (rank == 0) then
     rc = mpikvs_counter_cas(kvs, 1, 0_int64, 42_int64, seen)
     call expect(rc == MPIKVS_OK .and. seen == 0, 'counter_cas 0 -> 42')
  end if
  call MPI_Barrier(MPI_COMM_WORLD)
  rc = mpikvs_counter_add(kvs, 0, 0_int64, seen)
  call expect(rc == MPIKVS_OK .and. seen == ranks, 'counter 0: one add a rank')
  rc = mpikvs_counter_cas(kvs, 1, 0_int64, 7_int64, seen)
  call expect(rc == MPIKVS_OK .and. seen == 42, 'counter_cas 0 -> 7 sees 42')
  rc = mpikvs_counter_add(kvs, 99, 1_int64)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(mpikvs_last_error(kvs), '99') > 0, &
       'counter 99: ' // mpikvs_last_error(kvs))
  call MPI_Barrier(MPI_COMM_WORLD)

  ! save, then load into the table that holds the entries: refused
  ! without MPIKVS_LOAD_MERGE, with it every entry put again
  call get_environment_variable('MPIKVS_SHM_DIR', dir)
  if (len_trim(dir) == 0) dir = '/tmp'
  path = trim(dir) // '/check_fortran.kvs'
  rc = mpikvs_save(kvs, path)
  call expect(rc == MPIKVS_OK, 'save: ' // mpikvs_last_error(kvs))
  rc = mpikvs_load(kvs, path, 0)
  call expect(rc == MPIKVS_ERR_NOTEMPTY, 'load into a table with entries: refused')
  rc = mpikvs_load(kvs, path, MPIKVS_LOAD_MERGE, report)
  call expect(rc == MPIKVS_OK .and. report%entries >= N + 2 .and. &
       report%loaded == report%entries, 'load with MPIKVS_LOAD_MERGE: all loaded')
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) then
     open (newunit=unit, file=path, status='old', iostat=rc)
     if (rc == 0) close (unit, status='delete')
  end if

  rc = mpikvs_stats(kvs, MPIKVS_SCOPE_RANK, st)
  call expect(rc == MPIKVS_OK .and. st%gets >= 5 .and. st%hits >= 4 .and. &
       st%misses >= 1 .and. st%puts >= 5, 'stats of the rank')

  ! closed: every call an error naming the handle
  call expect(mpikvs_close(kvs) == MPIKVS_OK, 'close')
  rc = mpikvs_get(kvs, key, w)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'mpikvs_get: kvs: not an open handle') > 0, &
       'get on a closed handle: ' // text)
  call expect(mpikvs_close(kvs) == MPIKVS_ERR_INVAL, 'close of a closed handle')
  call expect(mpikvs_fence(never) == MPIKVS_ERR_INVAL, 'fence of a handle never opened')

  ! bad options
  opt%mode = 'bogus'
  rc = mpikvs_open(MPI_COMM_WORLD, kvs, opt)
  text = mpikvs_last_error(kvs)
  call expect(rc < 0 .and. index(text, 'bogus') > 0, "mode='bogus': " // &
       mpikvs_strerror(rc) // ': ' // text)
  opt%mode = ''
  opt%key_size = -8
  rc = mpikvs_open(MPI_COMM_WORLD, kvs, opt)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'options%key_size: negative') > 0, &
       'key_size=-8: ' // text)
  rc = mpikvs_open(MPI_COMM_NULL, kvs)
  text = mpikvs_last_error(kvs)
  call expect(rc == MPIKVS_ERR_INVAL .and. index(text, 'comm: not a communicator') > 0, &
       'MPI_COMM_NULL: ' // text)

  call expect(mpikvs_strerror(MPIKVS_MISS) == 'not found' .and. &
       mpikvs_strerror(MPIKVS_ERR_INVAL) == 'invalid argument', 'strerror')
  call surrogates()
  call finish()

contains

  ! A table with neighbourhoods ("near": one digit coarser, 16 members)
  ! whose every hit is to verify ("verify": 1.0), opened with
  ! MPIKVS_OPEN_VERIFY: each rank puts the 4 points of its cell, gets
  ! them as MPIKVS_VERIFY and reports; the statistics show the reports;
  ! get_near finds each cell's points with their values; a forgotten key
  ! is a miss and leaves its neighbourhood; after a clear all is gone.
  subroutine surrogates()
    type(mpikvs_t) :: s
    type(mpikvs_options) :: o
    type(mpikvs_stats) :: st
    character(len=1024) :: dir
    character(len=:), allocatable :: cpath
    integer(int64) :: k(2), keys4(2, 4), nkeys(2, 16)
    real(real64) :: xy(2), got(2), dist(16), inputs(2, 16), vals(2, 16)
    integer :: u, p, r, found, j, m

    call get_environment_variable('MPIKVS_SHM_DIR', dir)
    if (len_trim(dir) == 0) dir = '/tmp'
    cpath = trim(dir) // '/check_fortran_near.' // char(ichar('0') + rank) // '.json'
    open (newunit=u, file=cpath, status='replace', action='write')
    write (u, '(a)') '{ "version": 1, "tables": { "near": {', &
         ' "size": "50%", "verify": 1.0,', &
         ' "key": { "fields": [ { "name": "x", "type": "double", "digits": 4 },', &
         '   { "name": "y", "type": "double", "digits": 4 } ] },', &
         ' "value": { "fields": [ { "name": "v", "type": "double" },', &
         '   { "name": "w", "type": "double" } ] },', &
         ' "near": { "coarser": 1, "members": 16, "size": "50%" } } } }'
    close (u)
    o%config = cpath
    o%flags = MPIKVS_OPEN_VERIFY
    rc = mpikvs_open(MPI_COMM_WORLD, s, o)
    call expect(rc == MPIKVS_OK, 'open of the near table with MPIKVS_OPEN_VERIFY: ' // &
         mpikvs_last_error(s))
    open (newunit=u, file=cpath, status='old')
    close (u, status='delete')
    if (rc /= MPIKVS_OK) return
    call expect(mpikvs_near_inputs(s) == 2, 'near_inputs: 2')

    do p = 1, 4
       call point(rank, p, xy)
       rc = mpikvs_round_key(s, xy, keys4(:, p))
       if (rc == MPIKVS_OK) rc = mpikvs_put(s, keys4(:, p), value_of(xy))
       call expect(rc == MPIKVS_OK, 'round_key and put of a point')
    end do
    call expect(mpikvs_fence(s) == MPIKVS_OK, 'fence')
    do p = 1, 4
       call point(rank, p, xy)
       got = 0
       k = keys4(:, p)
       rc = mpikvs_get(s, k, got)
       call expect(rc == MPIKVS_VERIFY .and. all(got == value_of(xy)), &
            'get of a point: MPIKVS_VERIFY and its value: ' // mpikvs_strerror(rc))
       call expect(mpikvs_verify_report(s, k, 1.0e-7_real64) == MPIKVS_OK, &
            'verify_report: ' // mpikvs_last_error(s))
    end do
    call expect(mpikvs_verify_report(s, k, 1.0e-7_real64) == MPIKVS_ERR_INVAL, &
         'a second verify_report of a key: refused')
    rc = mpikvs_stats(s, ior(MPIKVS_SCOPE_RANK, MPIKVS_SINCE_OPEN), st)
    call expect(rc == MPIKVS_OK .and. st%verify_hits == 4 .and. &
         st%verify_reports == 4 .and. st%verify_below_1e_6 == 4 .and. &
         abs(mpikvs_stat_double(st%verify_error_max) - 1.0e-7_real64) < 1.0e-20_real64 .and. &
         abs(mpikvs_stat_double(st%verify_error_sum) - 4.0e-7_real64) < 1.0e-18_real64, &
         'stats: 4 verify hits and reports, max 1e-7, sum 4e-7')

    ! every rank's cell from a point nobody put
    do r = 0, ranks - 1
       call point(r, 4, xy)
       rc = mpikvs_round_key(s, xy + 0.002_real64, k)
       nkeys = 0
       rc = mpikvs_get_near(s, k, dist, inputs, vals, found, nkeys)
       ! its points (a member may be missing), nearest first, each with
       ! its own value
       m = 0
       do j = 1, found
          if (all(abs(vals(:, j) - value_of(inputs(:, j))) < 1.0e-12_real64) .and. &
               of_cell(r, inputs(:, j))) m = m + 1
          if (j > 1) then
             if (dist(j) < dist(j - 1)) m = -100
          end if
       end do
       call expect(rc == MPIKVS_OK .and. found >= 1 .and. found <= 4 .and. m == found, &
            'get_near of a cell: its points, nearest first, their values')
    end do
    rc = mpikvs_get_near(s, k, dist(1:2), inputs, vals, found)
    call expect(rc == MPIKVS_OK .and. found >= 1 .and. found <= 2, &
         'get_near of max 2 without keys')
    rc = mpikvs_get_near(s, k, dist, inputs(:, 1:4), vals, found)
    call expect(rc == MPIKVS_ERR_INVAL .and. &
         index(mpikvs_last_error(s), 'mpikvs_get_near: inputs:') > 0, &
         'get_near with inputs short of max: ' // mpikvs_last_error(s))

    ! forget: a miss, and the member gone
    k = keys4(:, 1)
    call expect(mpikvs_forget(s, k) == MPIKVS_OK, 'forget of a point')
    call expect(mpikvs_forget(s, k) == MPIKVS_MISS, 'forget of it again: MPIKVS_MISS')
    call expect(mpikvs_get(s, k, got) == MPIKVS_MISS, 'get of a forgotten key: a miss')
    call expect(mpikvs_fence(s) == MPIKVS_OK, 'fence')
    call point(rank, 4, xy)
    rc = mpikvs_round_key(s, xy + 0.002_real64, k)
    rc = mpikvs_get_near(s, k, dist, inputs, vals, found)
    call point(rank, 1, xy)
    call expect(rc == MPIKVS_OK .and. found >= 1 .and. found <= 3 .and. &
         .not. any(all(abs(inputs(:, 1:found) - spread(xy, 2, found)) < 1.0e-9_real64, 1)), &
         'get_near after a forget: not the forgotten one')

    ! clear: every get a miss, every neighbourhood empty
    call expect(mpikvs_clear(s) == MPIKVS_OK, 'clear: ' // mpikvs_last_error(s))
    m = 0
    do p = 1, 4
       k = keys4(:, p)
       if (mpikvs_get(s, k, got) == MPIKVS_MISS) m = m + 1
    end do
    rc = mpikvs_get_near(s, k, dist, inputs, vals, found)
    call expect(m == 4 .and. rc == MPIKVS_MISS .and. found == 0, &
         'after clear: misses and empty neighbourhoods')
    call expect(mpikvs_close(s) == MPIKVS_OK, 'close of the near table')
  end subroutine surrogates

  ! point p (1..4) of rank r's cell: 4-digit coordinates that round to
  ! the cell at 3 digits without a tie
  subroutine point(r, p, xy)
    integer, intent(in) :: r, p
    real(real64), intent(out) :: xy(2)

    xy = [1.0_real64 + 0.1_real64 * r + 0.001_real64 * (1 + mod(p - 1, 2)), &
         2.0_real64 + 0.001_real64 * (1 + (p - 1) / 2)]
  end subroutine point

  ! xy is one of the points of rank r's cell
  logical function of_cell(r, xy)
    integer, intent(in) :: r
    real(real64), intent(in) :: xy(2)
    real(real64) :: q(2)
    integer :: p

    of_cell = .false.
    do p = 1, 4
       call point(r, p, q)
       if (all(abs(q - xy) < 1.0e-9_real64)) of_cell = .true.
    end do
  end function of_cell

  pure function value_of(xy) result(v)
    real(real64), intent(in) :: xy(2)
    real(real64) :: v(2)

    v = [3.0_real64 * xy(1), xy(2) * xy(2)]
  end function value_of

  subroutine expect(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what

    if (cond) then
       pass = pass + 1
    else
       fail = fail + 1
       write (*, '(a,i0,2a)') 'FAIL rank ', rank, ': ', what
    end if
  end subroutine expect

  subroutine finish()
    write (*, '(a,i0,a,i0,a,i0,a)') 'check_fortran: rank ', rank, ': ', &
         pass, ' passed, ', fail, ' failed'
    call MPI_Finalize()
    if (fail > 0) stop 1
    stop
  end subroutine finish
end program check_fortran
