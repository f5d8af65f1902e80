! mpikvs.f90 - the Fortran module mpikvs: libmpikvs for programs that
! `use mpi_f08` or `use mpi` (mpikvs_fortran(3)).
!
! Each call is the C call of the same name, returning its return code:
! keys and values are any contiguous variables (type(*), dimension(..):
! any type and rank, scalars too, passed without a copy), checked by the
! C part (fortran/bind.c) against the handle's key and value sizes; no
! ISO_C_BINDING kind is asked of the caller.  The return codes, scopes
! and the type mpikvs_stats come from the C headers through the generated
! mpikvs_constants.inc (fortran/gen_constants.c).
module mpikvs
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_int, &
       c_int64_t, c_double, c_char, c_null_char, c_size_t, c_associated, &
       c_f_pointer
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use mpi_f08, only: MPI_Comm
  implicit none
  private

  include 'mpikvs_constants.inc'

  ! An open cache: from mpikvs_open until mpikvs_close.
  type, public :: mpikvs_t
     private
     type(c_ptr) :: h = c_null_ptr
     integer :: key_size = 0, value_size = 0
  end type mpikvs_t

  ! mpikvs_options_t: '' and 0 are the library's defaults.  Character
  ! components longer than these lengths are cut by Fortran's assignment.
  type, public :: mpikvs_options
     integer :: key_size = 0              ! bytes of a key (without config)
     integer :: value_size = 0            ! bytes of a value (without config)
     integer(int64) :: size_per_node = 0  ! bytes of bucket memory per node
     character(len=32) :: mode = ''       ! lockfree | fine-lock | coarse-lock
     character(len=4096) :: config = ''   ! JSON path; '': $MPIKVS_CONFIG
     character(len=160) :: table = ''     ! the config's table
     integer :: slots_per_bucket = 0
     character(len=32) :: transport = ''  ! auto | mpi | ucx
     integer :: flags = 0                 ! MPIKVS_OPEN_VERIFY, or 0
     real(real64) :: verify = 0           ! with it: the fraction of hits
                                          ! returned as MPIKVS_VERIFY; 0:
                                          ! the table's "verify"
  end type mpikvs_options

  ! A started batch, until mpikvs_wait or mpikvs_test says done.
  type, public :: mpikvs_request
     private
     integer(int64) :: id = 0
  end type mpikvs_request

  ! mpikvs_load_report_t
  type, bind(c), public :: mpikvs_load_report
     ! integer(int64), the kind C's uint64_t crosses as
     integer(c_int64_t) :: entries = 0      ! in the file
     integer(c_int64_t) :: loaded = 0       ! put into the table
     integer(c_int64_t) :: not_fitting = 0  ! puts that evicted an entry
  end type mpikvs_load_report

  public :: mpikvs_open, mpikvs_close, mpikvs_get, mpikvs_put, &
       mpikvs_put_if_absent, mpikvs_get_batch, mpikvs_put_batch, &
       mpikvs_get_batch_start, mpikvs_put_batch_start, mpikvs_wait, &
       mpikvs_test, mpikvs_round_key, mpikvs_fence, mpikvs_tier_invalidate, &
       mpikvs_save, mpikvs_load, mpikvs_counter_add, &
       mpikvs_counter_cas, mpikvs_counters, mpikvs_strerror, &
       mpikvs_last_error, mpikvs_key_size, mpikvs_value_size, &
       mpikvs_forget, mpikvs_verify_report, mpikvs_clear, mpikvs_get_near, &
       mpikvs_near_inputs, mpikvs_stat_double

  ! communicators of mpi_f08 and of mpi (integer)
  interface mpikvs_open
     module procedure open_f08, open_integer
  end interface mpikvs_open

  ! the same name as the type mpikvs_stats (public with it): a generic
  ! may have it
  interface mpikvs_stats
     module procedure stats
  end interface mpikvs_stats

  ! fortran/bind.c and the library: names the library does not have
  interface
     integer(c_int) function f_open(comm, key_size, value_size, &
          size_per_node, mode, config, table, slots_per_bucket, transport, &
          flags, verify, h) bind(c, name='mpikvs_f_open')
       import :: c_int, c_int64_t, c_char, c_ptr, c_double
       integer(c_int), value :: comm
       integer(c_int64_t), value :: key_size, value_size, size_per_node
       character(kind=c_char), intent(in) :: mode(*), config(*), table(*), &
            transport(*)
       integer(c_int), value :: slots_per_bucket, flags
       real(c_double), value :: verify
       type(c_ptr), intent(out) :: h
     end function f_open

     integer(c_int) function f_close(h) bind(c, name='mpikvs_f_close')
       import :: c_int, c_ptr
       type(c_ptr), intent(inout) :: h
     end function f_close

     integer(c_int) function f_get(h, key, value) bind(c, name='mpikvs_f_get')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
       type(*), dimension(..), intent(in) :: key
       type(*), dimension(..), intent(inout) :: value
     end function f_get

     integer(c_int) function f_put(h, key, value) bind(c, name='mpikvs_f_put')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
       type(*), dimension(..), intent(in) :: key, value
     end function f_put

     integer(c_int) function f_put_if_absent(h, key, value, present) &
          bind(c, name='mpikvs_f_put_if_absent')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
       type(*), dimension(..), intent(in) :: key, value
       type(*), dimension(..), intent(inout), optional :: present
     end function f_put_if_absent

     integer(c_int) function f_get_batch(h, n, keys, values, status) &
          bind(c, name='mpikvs_f_get_batch')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
       integer(c_int), value :: n
       type(*), dimension(..), intent(in) :: keys
       type(*), dimension(..), intent(inout) :: values
       integer(c_int), dimension(..), intent(inout) :: status
     end function f_get_batch

     integer(c_int) function f_put_batch(h, n, keys, values) &
          bind(c, name='mpikvs_f_put_batch')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
       integer(c_int), value :: n
       type(*), dimension(..), intent(in) :: keys, values
     end function f_put_batch

     integer(c_int) function f_get_batch_start(h, n, keys, values, status, &
          id) bind(c, name='mpikvs_f_get_batch_start')
       import :: c_int, c_ptr, c_int64_t
       type(c_ptr), value :: h
       integer(c_int), value :: n
       type(*), dimension(..), intent(in), asynchronous :: keys
       type(*), dimension(..), intent(inout), asynchronous :: values
       integer(c_int), dimension(..), intent(inout), asynchronous :: status
       integer(c_int64_t), intent(inout) :: id
     end function f_get_batch_start

     integer(c_int) function f_put_batch_start(h, n, keys, values, id) &
          bind(c, name='mpikvs_f_put_batch_start')
       import :: c_int, c_ptr, c_int64_t
       type(c_ptr), value :: h
       integer(c_int), value :: n
       type(*), dimension(..), intent(in), asynchronous :: keys, values
       integer(c_int64_t), intent(inout) :: id
     end function f_put_batch_start

     integer(c_int) function f_wait(h, id) bind(c, name='mpikvs_f_wait')
       import :: c_int, c_ptr, c_int64_t
       type(c_ptr), value :: h
       integer(c_int64_t), intent(inout) :: id
     end function f_wait

     integer(c_int) function f_test(h, id, done) bind(c, name='mpikvs_f_test')
       import :: c_int, c_ptr, c_int64_t
       type(c_ptr), value :: h
       integer(c_int64_t), intent(inout) :: id
       integer(c_int), intent(out) :: done
     end function f_test

     integer(c_int) function f_round_key(h, inputs, n, key) &
          bind(c, name='mpikvs_f_round_key')
       import :: c_int, c_ptr, c_double
       type(c_ptr), value :: h
       real(c_double), intent(in) :: inputs(*)
       integer(c_int), value :: n
       type(*), dimension(..), intent(inout) :: key
     end function f_round_key

     integer(c_int) function f_fence(h) bind(c, name='mpikvs_f_fence')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
     end function f_fence

     integer(c_int) function f_tier_invalidate(h) &
          bind(c, name='mpikvs_f_tier_invalidate')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
     end function f_tier_invalidate

     integer(c_int) function f_stats(h, scope, out) bind(c, name='mpikvs_f_stats')
       import :: c_int, c_ptr, mpikvs_stats
       type(c_ptr), value :: h
       integer(c_int), value :: scope
       type(mpikvs_stats), intent(out) :: out
     end function f_stats

     integer(c_int) function f_save(h, path) bind(c, name='mpikvs_f_save')
       import :: c_int, c_ptr, c_char
       type(c_ptr), value :: h
       character(kind=c_char), intent(in) :: path(*)
     end function f_save

     integer(c_int) function f_load(h, path, flags, report) &
          bind(c, name='mpikvs_f_load')
       import :: c_int, c_ptr, c_char, mpikvs_load_report
       type(c_ptr), value :: h
       character(kind=c_char), intent(in) :: path(*)
       integer(c_int), value :: flags
       type(mpikvs_load_report), intent(out), optional :: report
     end function f_load

     integer(c_int) function f_counter_add(h, counter, add, before) &
          bind(c, name='mpikvs_f_counter_add')
       import :: c_int, c_ptr, c_int64_t
       type(c_ptr), value :: h
       integer(c_int), value :: counter
       integer(c_int64_t), value :: add
       integer(c_int64_t), intent(out), optional :: before
     end function f_counter_add

     integer(c_int) function f_counter_cas(h, counter, expect, desired, &
          seen) bind(c, name='mpikvs_f_counter_cas')
       import :: c_int, c_ptr, c_int64_t
       type(c_ptr), value :: h
       integer(c_int), value :: counter
       integer(c_int64_t), value :: expect, desired
       integer(c_int64_t), intent(out), optional :: seen
     end function f_counter_cas

     integer(c_int) function f_forget(h, key) bind(c, name='mpikvs_f_forget')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
       type(*), dimension(..), intent(in) :: key
     end function f_forget

     integer(c_int) function f_verify_report(h, key, error) &
          bind(c, name='mpikvs_f_verify_report')
       import :: c_int, c_ptr, c_double
       type(c_ptr), value :: h
       type(*), dimension(..), intent(in) :: key
       real(c_double), value :: error
     end function f_verify_report

     integer(c_int) function f_clear(h) bind(c, name='mpikvs_f_clear')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
     end function f_clear

     integer(c_int) function f_get_near(h, key, distances, inputs, values, &
          keys, found) bind(c, name='mpikvs_f_get_near')
       import :: c_int, c_ptr, c_double
       type(c_ptr), value :: h
       type(*), dimension(..), intent(in) :: key
       real(c_double), dimension(..), intent(inout) :: distances, inputs
       type(*), dimension(..), intent(inout) :: values
       type(*), dimension(..), intent(inout), optional :: keys
       integer(c_int), intent(out) :: found
     end function f_get_near

     integer(c_int64_t) function f_near_inputs(h) &
          bind(c, name='mpikvs_f_near_inputs')
       import :: c_int64_t, c_ptr
       type(c_ptr), value :: h
     end function f_near_inputs

     integer(c_int) function f_counters(h) bind(c, name='mpikvs_f_counters')
       import :: c_int, c_ptr
       type(c_ptr), value :: h
     end function f_counters

     integer(c_int64_t) function f_key_size(h) bind(c, name='mpikvs_f_key_size')
       import :: c_int64_t, c_ptr
       type(c_ptr), value :: h
     end function f_key_size

     integer(c_int64_t) function f_value_size(h) &
          bind(c, name='mpikvs_f_value_size')
       import :: c_int64_t, c_ptr
       type(c_ptr), value :: h
     end function f_value_size

     type(c_ptr) function f_last_error(h) bind(c, name='mpikvs_f_last_error')
       import :: c_ptr
       type(c_ptr), value :: h
     end function f_last_error

     type(c_ptr) function c_strerror(rc) bind(c, name='mpikvs_strerror')
       import :: c_ptr, c_int
       integer(c_int), value :: rc
     end function c_strerror

     integer(c_size_t) function c_strlen(s) bind(c, name='strlen')
       import :: c_size_t, c_ptr
       type(c_ptr), value :: s
     end function c_strlen
  end interface

contains

  ! A C string as a Fortran one ('' for NULL).
  function from_c(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: a(:)
    integer :: i, n

    if (.not. c_associated(p)) then
       s = ''
       return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, a, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
       s(i:i) = a(i)
    end do
  end function from_c

  ! A Fortran string, its trailing blanks cut, NUL-terminated for C.
  pure function to_c(s) result(c)
    character(len=*), intent(in) :: s
    character(len=len_trim(s) + 1, kind=c_char) :: c

    c = trim(s) // c_null_char
  end function to_c

  ! open with the Fortran handle of any communicator
  integer function open_handle(fcomm, kvs, options) result(rc)
    integer, intent(in) :: fcomm
    type(mpikvs_t), intent(out) :: kvs
    type(mpikvs_options), intent(in), optional :: options
    type(mpikvs_options) :: o

    if (present(options)) o = options
    rc = f_open(fcomm, int(o%key_size, c_int64_t), &
         int(o%value_size, c_int64_t), int(o%size_per_node, c_int64_t), &
         to_c(o%mode), to_c(o%config), to_c(o%table), o%slots_per_bucket, &
         to_c(o%transport), o%flags, real(o%verify, c_double), kvs%h)
    if (rc == MPIKVS_OK) then
       kvs%key_size = int(f_key_size(kvs%h))
       kvs%value_size = int(f_value_size(kvs%h))
    end if
  end function open_handle

  integer function open_f08(comm, kvs, options) result(rc)
    type(MPI_Comm), intent(in) :: comm
    type(mpikvs_t), intent(out) :: kvs
    type(mpikvs_options), intent(in), optional :: options

    rc = open_handle(comm%MPI_VAL, kvs, options)
  end function open_f08

  integer function open_integer(comm, kvs, options) result(rc)
    integer, intent(in) :: comm
    type(mpikvs_t), intent(out) :: kvs
    type(mpikvs_options), intent(in), optional :: options

    rc = open_handle(comm, kvs, options)
  end function open_integer

  integer function mpikvs_close(kvs) result(rc)
    type(mpikvs_t), intent(inout) :: kvs

    rc = f_close(kvs%h)
    kvs%key_size = 0
    kvs%value_size = 0
  end function mpikvs_close

  integer function mpikvs_get(kvs, key, value) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    type(*), dimension(..), intent(in) :: key
    type(*), dimension(..), intent(inout) :: value

    rc = f_get(kvs%h, key, value)
  end function mpikvs_get

  integer function mpikvs_put(kvs, key, value) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    type(*), dimension(..), intent(in) :: key, value

    rc = f_put(kvs%h, key, value)
  end function mpikvs_put

  integer function mpikvs_put_if_absent(kvs, key, value, present) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    type(*), dimension(..), intent(in) :: key, value
    type(*), dimension(..), intent(inout), optional :: present

    rc = f_put_if_absent(kvs%h, key, value, present)
  end function mpikvs_put_if_absent

  integer function mpikvs_get_batch(kvs, n, keys, values, status) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    integer, intent(in) :: n
    type(*), dimension(..), intent(in) :: keys
    type(*), dimension(..), intent(inout) :: values
    integer, dimension(..), intent(inout) :: status

    rc = f_get_batch(kvs%h, n, keys, values, status)
  end function mpikvs_get_batch

  integer function mpikvs_put_batch(kvs, n, keys, values) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    integer, intent(in) :: n
    type(*), dimension(..), intent(in) :: keys, values

    rc = f_put_batch(kvs%h, n, keys, values)
  end function mpikvs_put_batch

  ! The started batches: keys, values and status stay the library's until
  ! mpikvs_wait or mpikvs_test says done (ASYNCHRONOUS in the caller).
  integer function mpikvs_get_batch_start(kvs, n, keys, values, status, &
       req) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    integer, intent(in) :: n
    type(*), dimension(..), intent(in), asynchronous :: keys
    type(*), dimension(..), intent(inout), asynchronous :: values
    integer, dimension(..), intent(inout), asynchronous :: status
    type(mpikvs_request), intent(inout) :: req

    rc = f_get_batch_start(kvs%h, n, keys, values, status, req%id)
  end function mpikvs_get_batch_start

  integer function mpikvs_put_batch_start(kvs, n, keys, values, req) &
       result(rc)
    type(mpikvs_t), intent(in) :: kvs
    integer, intent(in) :: n
    type(*), dimension(..), intent(in), asynchronous :: keys, values
    type(mpikvs_request), intent(inout) :: req

    rc = f_put_batch_start(kvs%h, n, keys, values, req%id)
  end function mpikvs_put_batch_start

  integer function mpikvs_wait(kvs, req) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    type(mpikvs_request), intent(inout) :: req

    rc = f_wait(kvs%h, req%id)
  end function mpikvs_wait

  integer function mpikvs_test(kvs, req, done) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    type(mpikvs_request), intent(inout) :: req
    logical, intent(out) :: done
    integer(c_int) :: d

    rc = f_test(kvs%h, req%id, d)
    done = d /= 0
  end function mpikvs_test

  integer function mpikvs_round_key(kvs, inputs, key) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    real(real64), intent(in) :: inputs(:)
    type(*), dimension(..), intent(inout) :: key

    rc = f_round_key(kvs%h, inputs, size(inputs), key)
  end function mpikvs_round_key

  integer function mpikvs_fence(kvs) result(rc)
    type(mpikvs_t), intent(in) :: kvs

    rc = f_fence(kvs%h)
  end function mpikvs_fence

  integer function mpikvs_tier_invalidate(kvs) result(rc)
    type(mpikvs_t), intent(in) :: kvs

    rc = f_tier_invalidate(kvs%h)
  end function mpikvs_tier_invalidate

  ! MPIKVS_OK (removed) or MPIKVS_MISS (not in the table)
  integer function mpikvs_forget(kvs, key) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    type(*), dimension(..), intent(in) :: key

    rc = f_forget(kvs%h, key)
  end function mpikvs_forget

  ! key: a hit mpikvs_get returned as MPIKVS_VERIFY; error >= 0
  integer function mpikvs_verify_report(kvs, key, error) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    type(*), dimension(..), intent(in) :: key
    real(real64), intent(in) :: error

    rc = f_verify_report(kvs%h, key, real(error, c_double))
  end function mpikvs_verify_report

  integer function mpikvs_clear(kvs) result(rc)
    type(mpikvs_t), intent(in) :: kvs

    rc = f_clear(kvs%h)
  end function mpikvs_clear

  ! Up to size(distances) members of key's neighbourhood, nearest first:
  ! found of them in distances(1:found), inputs(:, 1:found) (first
  ! dimension mpikvs_near_inputs), values and, if present, keys (room for
  ! size(distances) values and keys each).  MPIKVS_OK, or MPIKVS_MISS
  ! with found 0.
  integer function mpikvs_get_near(kvs, key, distances, inputs, values, &
       found, keys) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    type(*), dimension(..), intent(in) :: key
    real(real64), intent(inout) :: distances(:)
    real(real64), intent(inout) :: inputs(:, :)
    type(*), dimension(..), intent(inout) :: values
    integer, intent(out) :: found
    type(*), dimension(..), intent(inout), optional :: keys
    integer(c_int) :: n

    rc = f_get_near(kvs%h, key, distances, inputs, values, keys, n)
    found = n
  end function mpikvs_get_near

  ! how many doubles a member's inputs has; 0 for a table without "near"
  integer function mpikvs_near_inputs(kvs)
    type(mpikvs_t), intent(in) :: kvs

    mpikvs_near_inputs = int(f_near_inputs(kvs%h))
  end function mpikvs_near_inputs

  ! verify_error_sum and verify_error_max of mpikvs_stats hold a double's
  ! bits: their value
  elemental real(real64) function mpikvs_stat_double(bits)
    integer(c_int64_t), intent(in) :: bits

    mpikvs_stat_double = transfer(bits, mpikvs_stat_double)
  end function mpikvs_stat_double

  ! scope: MPIKVS_SCOPE_RANK, _NODE or _JOB, ior'ed with MPIKVS_SINCE_OPEN
  integer function stats(kvs, scope, out) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    integer, intent(in) :: scope
    type(mpikvs_stats), intent(out) :: out

    rc = f_stats(kvs%h, scope, out)
  end function stats

  integer function mpikvs_save(kvs, path) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    character(len=*), intent(in) :: path

    rc = f_save(kvs%h, to_c(path))
  end function mpikvs_save

  integer function mpikvs_load(kvs, path, flags, report) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    character(len=*), intent(in) :: path
    integer, intent(in) :: flags
    type(mpikvs_load_report), intent(out), optional :: report

    rc = f_load(kvs%h, to_c(path), flags, report)
  end function mpikvs_load

  ! Counters hold unsigned 64-bit words, read as integer(int64).
  integer function mpikvs_counter_add(kvs, counter, add, before) result(rc)
    type(mpikvs_t), intent(in) :: kvs
    integer, intent(in) :: counter
    integer(int64), intent(in) :: add
    integer(int64), intent(out), optional :: before

    rc = f_counter_add(kvs%h, counter, add, before)
  end function mpikvs_counter_add

  integer function mpikvs_counter_cas(kvs, counter, expect, desired, seen) &
       result(rc)
    type(mpikvs_t), intent(in) :: kvs
    integer, intent(in) :: counter
    integer(int64), intent(in) :: expect, desired
    integer(int64), intent(out), optional :: seen

    rc = f_counter_cas(kvs%h, counter, expect, desired, seen)
  end function mpikvs_counter_cas

  integer function mpikvs_counters(kvs)
    type(mpikvs_t), intent(in) :: kvs

    mpikvs_counters = f_counters(kvs%h)
  end function mpikvs_counters

  function mpikvs_strerror(rc) result(s)
    integer, intent(in) :: rc
    character(len=:), allocatable :: s

    s = from_c(c_strerror(rc))
  end function mpikvs_strerror

  ! The binding's text when its own check failed last, else the library's.
  function mpikvs_last_error(kvs) result(s)
    type(mpikvs_t), intent(in) :: kvs
    character(len=:), allocatable :: s

    s = from_c(f_last_error(kvs%h))
  end function mpikvs_last_error

  integer function mpikvs_key_size(kvs)
    type(mpikvs_t), intent(in) :: kvs

    mpikvs_key_size = kvs%key_size
  end function mpikvs_key_size

  integer function mpikvs_value_size(kvs)
    type(mpikvs_t), intent(in) :: kvs

    mpikvs_value_size = kvs%value_size
  end function mpikvs_value_size
end module mpikvs
